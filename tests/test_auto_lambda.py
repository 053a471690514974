"""
``gae_lambda="auto"``: PPO's lambda for a rollout where the last rollouts' baselines explained too little of their
returns, 1 otherwise; checked on the rule alone and through the buffer, on rollouts whose returns the baselines explain
or do not.
"""

import inspect

import numpy as np
import pytest
import torch as th
from gymnasium import spaces

from sb3_gpg import GPG
from sb3_gpg.common.buffers import GroupRolloutBuffer
from sb3_gpg.estimator.auto_lambda import EXPLAINED_THRESHOLD, PPO_LAMBDA, WINDOW, chosen_lambda


def test_the_rule_reads_the_median_of_the_last_rollouts_and_ignores_nan():
    assert chosen_lambda([]) == 1.0 and chosen_lambda([np.nan, np.nan]) == 1.0
    assert chosen_lambda([EXPLAINED_THRESHOLD - 0.01]) == PPO_LAMBDA
    assert chosen_lambda([EXPLAINED_THRESHOLD]) == 1.0
    # one rollout's dip does not move the median; the older rollouts beyond the window are not read
    assert chosen_lambda([0.95, 0.95, -3.0, 0.95]) == 1.0
    assert chosen_lambda([0.1] * 5 + [0.95] * WINDOW) == 1.0
    assert chosen_lambda([0.95] * 5 + [0.1] * WINDOW) == PPO_LAMBDA
    assert chosen_lambda([0.1, np.nan, np.nan]) == PPO_LAMBDA
    # while the linear baseline's optimism waits for a goal, PPO's lambda whatever the baselines explain
    assert chosen_lambda([], goal_waits=True) == PPO_LAMBDA
    assert chosen_lambda([0.99] * WINDOW, goal_waits=True) == PPO_LAMBDA


def rollouts(noise, n_rollouts=4, n_steps=64, n_envs=4, seed=0):
    """Rollouts of 8-step episodes whose reward is 1 a step plus ``noise`` times a standard normal draw."""
    rng = np.random.default_rng(seed)
    for _ in range(n_rollouts):
        starts = np.zeros((n_steps, n_envs), dtype=np.float32)
        starts[::8] = 1.0
        rewards = (1.0 + noise * rng.normal(size=(n_steps, n_envs))).astype(np.float32)
        yield rng.normal(size=(n_steps, n_envs, 3)).astype(np.float32), rewards, starts


def lambdas_used(buffer, given):
    """:return: GAE's lambda of each of the ``given`` rollouts computed in ``buffer``, checked to be the same when a
    rollout is computed again (which reads the explained variance as it was before the first time)"""
    used = []
    for observations, rewards, starts in given:
        buffer.reset()
        for step in range(64):
            buffer.add(observations[step], np.zeros((4, 1)), rewards[step], starts[step], th.zeros(4), th.zeros(4))
        for _ in range(2):
            buffer.compute_returns_and_advantage(th.zeros(4), np.ones(4, dtype=bool), last_obs=observations[-1])
            used.append(buffer.gae_lambda)
        assert used[-1] == used[-2]
    return used[::2]


@pytest.mark.parametrize(("noise", "expected"), [(0.0, 1.0), (3.0, PPO_LAMBDA)])
def test_the_buffer_takes_ppos_lambda_where_the_baselines_explain_little_of_the_returns(noise, expected):
    buffer = GroupRolloutBuffer(64, spaces.Box(-5, 5, (3,)), spaces.Discrete(2), gamma=0.99, n_envs=4, gae_lambda="auto",
                                baseline="auto", truncated_returns="bootstrap")  # fmt: skip
    used = lambdas_used(buffer, rollouts(noise))
    assert used[0] == 1.0 and used[1:] == [expected] * 3
    assert buffer.group_stats["gae_lambda"] == expected
    buffer.reset_estimator_state()
    assert len(buffer._explained) == 0


@pytest.mark.parametrize("optimism", [True, False])
@pytest.mark.parametrize("goal_kept", [True, False])
def test_auto_takes_ppos_lambda_while_the_optimism_waits_for_a_goal(optimism, goal_kept):
    # -1 a step and 8-step episodes everywhere: the returns are the time left, which the baselines explain, so the
    # rule alone keeps 1, under which the optimism cannot act. At the end of the third rollout env 0's episode ends
    # early: a goal, which the memory holds through the fourth. Kept, the fourth finds it again at its end; not kept,
    # its 32 episodes all run to the limit after it: found by chance, it lapses (LAPSE_EPISODES), and in the fifth the
    # optimism waits again
    costly = [(observations, -rewards, starts) for observations, rewards, starts in rollouts(0.0, n_rollouts=5)]
    costly[2][2][60, 0] = 1.0
    if goal_kept:
        costly[3][2][60, 1] = 1.0
    buffer = GroupRolloutBuffer(64, spaces.Box(-5, 5, (3,)), spaces.Discrete(2), gamma=0.99, n_envs=4, gae_lambda="auto",
                                baseline="auto", truncated_returns="bootstrap",
                                baseline_kwargs={"optimism": optimism})  # fmt: skip
    lambdas, raised, explained = [], [], []
    for rollout in costly:
        lambdas += lambdas_used(buffer, [rollout])
        raised.append(buffer.group_stats.get("optimism_raised"))
        explained.append(buffer.group_stats["baseline_explained_variance"])
    if not optimism:
        assert lambdas == [1.0] * 5 and raised == [None] * 5
        return
    # PPO's lambda and raised baselines until the goal; then the rule, on what the rollouts' baselines explained
    assert lambdas[:2] == [PPO_LAMBDA] * 2 and raised[:4] == [1.0, 1.0, 0.0, 0.0]
    assert lambdas[2:4] == [chosen_lambda(explained[:2]), chosen_lambda(explained[:3])]
    if goal_kept:
        assert raised[4] == 0.0 and lambdas[4] == chosen_lambda(explained[:4])
    else:
        assert raised[4] == 1.0 and lambdas[4] == PPO_LAMBDA
    # the fifth rollout's 32 episodes to the limit lapse the goal either way
    assert not buffer.baseline_memory.goal_seen


def test_with_a_lambda_given_a_goal_found_does_not_lapse():
    # the rollouts above, the goal not kept: with PPO's lambda given, the lambda-returns read the goal's better return,
    # and the optimism stays off after it whatever follows
    costly = [(observations, -rewards, starts) for observations, rewards, starts in rollouts(0.0, n_rollouts=5)]
    costly[2][2][60, 0] = 1.0
    buffer = GroupRolloutBuffer(64, spaces.Box(-5, 5, (3,)), spaces.Discrete(2), gamma=0.99, n_envs=4,
                                gae_lambda=PPO_LAMBDA, baseline="auto", truncated_returns="bootstrap")  # fmt: skip
    raised = []
    for rollout in costly:
        lambdas_used(buffer, [rollout])
        raised.append(buffer.group_stats["optimism_raised"])
    assert raised == [1.0, 1.0, 0.0, 0.0, 0.0] and buffer.baseline_memory.goal_seen


def test_under_the_bins_auto_keeps_monte_carlo_advantages():
    # the threshold reads a fitted baseline's explained variance: the bins keep lambda 1 where the returns are as
    # noisy as those on which the linear baseline takes PPO's lambda (above)
    buffer = GroupRolloutBuffer(64, spaces.Box(-5, 5, (3,)), spaces.Discrete(2), gamma=0.99, n_envs=4, gae_lambda="auto",
                                baseline="bins")  # fmt: skip
    assert lambdas_used(buffer, rollouts(3.0)) == [1.0] * 4 and not buffer.auto_lambda


def test_gpgs_default_is_auto_and_the_variants_keep_monte_carlo_advantages():
    from sb3_gpg import MaskableGPG, MaskableRecurrentGPG, RecurrentGPG

    assert inspect.signature(GPG).parameters["gae_lambda"].default == "auto"
    for variant in (MaskableGPG, RecurrentGPG, MaskableRecurrentGPG):
        assert inspect.signature(variant).parameters["gae_lambda"].default == 1.0, variant


def test_a_model_saved_and_loaded_keeps_auto_and_a_misspelt_value_is_refused(tmp_path):
    model = GPG("MlpPolicy", "Pendulum-v1", gae_lambda="auto", n_steps=64, batch_size=64, n_epochs=1, seed=0)
    model.learn(128)
    assert model.rollout_buffer.group_stats["gae_lambda"] in (1.0, PPO_LAMBDA)
    model.save(tmp_path / "model.zip")
    loaded = GPG.load(tmp_path / "model.zip")
    assert loaded.gae_lambda == "auto" and loaded.rollout_buffer.auto_lambda
    # a file that holds a number (as every file saved before "auto" was the default holds 1.0) keeps it
    GPG("MlpPolicy", "Pendulum-v1", gae_lambda=1.0, n_steps=64, batch_size=64, seed=0).save(tmp_path / "one.zip")
    loaded = GPG.load(tmp_path / "one.zip")
    assert loaded.gae_lambda == loaded.rollout_buffer.gae_lambda == 1.0 and not loaded.rollout_buffer.auto_lambda
    with pytest.raises(ValueError, match="'auto'"):
        GPG("MlpPolicy", "Pendulum-v1", gae_lambda="Auto")
