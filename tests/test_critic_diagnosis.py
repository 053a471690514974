"""
The critic diagnosis's pieces: the explained variance read from SB3's printed tables, PPO's critic without memory or
without capacity (``sb3_gpg_bench.critic_variants``), and the explained-variance report.
"""

import io
import json

import numpy as np
import pytest
import torch as th
from gymnasium.wrappers import TimeAwareObservation
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback, CallbackList
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import HumanOutputFormat, Logger

from sb3_gpg import GPG
from sb3_gpg.estimator.optimism import LAPSE_EPISODES
from sb3_gpg_bench.critic_variants import (
    AdvantageSignal,
    BaselineWithoutTime,
    FreshCritic,
    GoalLapses,
    LinearCritic,
    MonteCarloCritic,
    ReturnsExplained,
    TimeCritic,
    estimate_module,
)
from sb3_gpg_bench.explained_variance import explained_report
from sb3_gpg_bench.suite import LOGGED_KEYS, logged_series, thinned
from sb3_gpg_bench.suites import Setting, Suite


def test_logged_series_reads_sb3s_printed_tables():
    stream = io.StringIO()
    logger = Logger(folder=None, output_formats=[HumanOutputFormat(stream)])
    printed = [(4096, 0.25, 0.5), (8192, -1.5, None), (12288, 0.875, 0.125)]
    for steps, critic, baseline in printed:
        logger.record("time/total_timesteps", steps)
        logger.record("rollout/ep_rew_mean", 3.0)
        logger.record("train/explained_variance", critic)
        if baseline is not None:
            logger.record("gpg/baseline_explained_variance", baseline)
        logger.dump(steps)
    # an evaluation's table without either key, and text between tables
    stream.write("Eval num_timesteps=12500, episode_reward=1.00 +/- 0.00\n")
    logger.record("time/total_timesteps", 12500)
    logger.record("eval/mean_reward", 1.0)
    logger.dump(12500)
    series = logged_series(stream.getvalue(), LOGGED_KEYS)
    assert series["train/explained_variance"] == [[4096, 0.25], [8192, -1.5], [12288, 0.875]]
    assert series["gpg/baseline_explained_variance"] == [[4096, 0.5], [12288, 0.125]]


def test_a_long_log_keeps_evenly_spaced_points_with_its_ends():
    short = [[float(step), 0.5] for step in range(10)]
    long = [[float(step), float(step % 7)] for step in range(31_250)]  # InvertedPendulum's updates over 1M steps
    kept = thinned({"short": short, "long": long}, max_points=100)
    assert kept["short"] == short
    assert len(kept["long"]) == 100 and kept["long"][0] == long[0] and kept["long"][-1] == long[-1]
    gaps = np.diff([step for step, _ in kept["long"]])
    assert gaps.min() >= 315 and gaps.max() <= 316  # evenly spaced: 31,249 steps over 99 gaps


def _value_parameters(policy):
    return [p.detach().clone() for module in (policy.mlp_extractor.value_net, policy.value_net) for p in module.parameters()]


def test_fresh_critic_reinitialises_the_value_network_and_its_adam_moments_only():
    model = PPO("MlpPolicy", "Pendulum-v1", n_steps=64, batch_size=64, n_epochs=2, seed=0, device="cpu")
    model.learn(128)  # trained: the value network and Adam's moments moved
    trained = _value_parameters(model.policy)
    actor = [p.detach().clone() for p in model.policy.mlp_extractor.policy_net.parameters()]
    callback = FreshCritic()
    callback.init_callback(model)
    th.manual_seed(0)
    callback.on_rollout_end()
    fresh = _value_parameters(model.policy)
    assert all(not th.equal(before, after) for before, after in zip(trained, fresh, strict=True))
    assert all(
        th.equal(before, after)
        for before, after in zip(actor, model.policy.mlp_extractor.policy_net.parameters(), strict=True)
    )
    # a fresh initialisation: SB3's orthogonal one (value head gain 1, so its rows have norm 1), biases 0
    assert th.allclose(model.policy.value_net.weight.norm(), th.tensor(1.0), atol=1e-5)
    assert all(
        float(module.bias.detach().abs().max()) == 0.0
        for module in model.policy.mlp_extractor.value_net
        if hasattr(module, "bias")
    )
    value_parameters = {
        id(p) for module in (model.policy.mlp_extractor.value_net, model.policy.value_net) for p in module.parameters()
    }
    state = model.policy.optimizer.state
    assert not any(id(p) in value_parameters for p in state) and any(id(p) not in value_parameters for p in state)


def _time_aware_ppo_whose_actor_ignores_the_time(callback, steps: int, obs: th.Tensor):
    """:return: the policy of PPO trained on Pendulum with the time observed and ``callback``, checked to be optimised
    whole and to act alike at two times (the rows of ``obs`` differ by their time alone)"""
    env = make_vec_env("Pendulum-v1", n_envs=2, seed=0, wrapper_class=TimeAwareObservation)
    model = PPO("MlpPolicy", env, n_steps=64, batch_size=64, n_epochs=2, seed=0, device="cpu")
    model.learn(steps, callback=callback)
    policy = model.policy
    assert {id(p) for p in policy.parameters()} == {id(p) for group in policy.optimizer.param_groups for p in group["params"]}
    means = policy.get_distribution(obs).distribution.mean.detach()
    # equal but for the last bits of a sliced input's matrix product
    assert th.allclose(means[0], means[1], rtol=1e-6, atol=1e-9)
    return policy


def test_linear_critic_is_linear_in_the_linear_baselines_features_and_the_actor_ignores_the_time():
    obs = th.tensor([[0.5, -0.25, 12.0, 3.0], [0.5, -0.25, 12.0, 40.0]])
    policy = _time_aware_ppo_whose_actor_ignores_the_time(LinearCritic(), 256, obs)
    # by hand: weights on [clip(obs), clip(obs)**2, t, t**2, t**3, 1]
    weights, bias = policy.value_net.weight.detach()[0], policy.value_net.bias.detach()[0]
    assert float(weights.abs().sum()) > 0  # trained away from its zero start
    for row in obs:
        x = th.clamp(row[:3], -10, 10)
        t = row[3]
        features = th.cat([x, x**2, th.stack([t, t**2, t**3, th.tensor(1.0)])])
        assert float(policy.predict_values(row[None])[0, 0]) == pytest.approx(float(features @ weights + bias), rel=1e-5)


def test_time_critic_reads_the_time_where_the_actor_does_not():
    obs = th.tensor([[0.5, -0.25, 1.0, 3.0], [0.5, -0.25, 1.0, 40.0]])
    policy = _time_aware_ppo_whose_actor_ignores_the_time(TimeCritic(), 128, obs)
    values = policy.predict_values(obs).detach()
    assert abs(float(values[0, 0] - values[1, 0])) > 1e-3


def test_baseline_without_time_fits_the_observation_alone_and_is_put_back():
    original = estimate_module.linear_features
    model = GPG("MlpPolicy", "Pendulum-v1", n_steps=64, batch_size=64, n_epochs=1, seed=0, device="cpu")
    seen = []

    def recording(flat_obs, times, *args, **kwargs):
        features = original(flat_obs, times, *args, **kwargs)
        seen.append((times.copy(), features))
        return features

    estimate_module.linear_features = recording
    try:
        model.learn(128, callback=BaselineWithoutTime())
        assert estimate_module.linear_features is recording  # put back when training ended
    finally:
        estimate_module.linear_features = original
    assert seen and all(not times.any() for times, _ in seen)
    # the cubic in the time is constant over a rollout's samples, the observation's columns are not (the state after
    # the rollout is one row)
    rollouts = [features for _, features in seen if len(features) > 1]
    assert rollouts and all(np.ptp(f[:, 1:4], axis=0).max() == 0 and np.ptp(f[:, 4:7], axis=0).min() > 0 for f in rollouts)


class _GoalSeenLongAgo(BaseCallback):
    """A goal counts as seen, with one episode short of the lapse at the limit since (set when training starts)."""

    def _on_step(self) -> bool:
        return True

    def _on_training_start(self) -> None:
        memory = self.model.rollout_buffer.baseline_memory
        memory.goal_seen, memory.limits_since_goal = True, LAPSE_EPISODES - 1


@pytest.mark.parametrize("told", [False, True])
def test_goal_lapses_under_a_given_lambda_once_told(told):
    # one env, 256 steps: a random policy's first MountainCar episode runs to the 200-step limit inside the rollout
    model = GPG("MlpPolicy", "MountainCar-v0", n_steps=256, batch_size=64, n_epochs=1, gae_lambda=0.95, seed=0, device="cpu")
    callbacks = [GoalLapses(), _GoalSeenLongAgo()] if told else [_GoalSeenLongAgo()]
    model.learn(256, callback=CallbackList(callbacks))
    memory = model.rollout_buffer.baseline_memory
    assert memory.limits_since_goal >= LAPSE_EPISODES
    assert memory.goal_seen is not told  # the algorithm lapses under "auto" only


def _cartpole_rollout(callbacks):
    """:return: PPO on CartPole after one rollout of 2 x 64 steps collected with ``callbacks``, and the rollout's
    returns by hand, env by env: each episode's discounted rewards, the one the rollout cuts completed by the value
    after it (``True``) or left cut (``False``)"""
    from stable_baselines3.common.callbacks import CallbackList
    from stable_baselines3.common.utils import obs_as_tensor

    model = PPO("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=1), n_steps=64, seed=1, device="cpu")
    _, callback = model._setup_learn(128, callback=CallbackList(callbacks))
    model.collect_rollouts(model.env, callback, model.rollout_buffer, model.n_steps)
    buffer, gamma = model.rollout_buffer, model.gamma
    after = model.policy.predict_values(obs_as_tensor(model._last_obs, "cpu")).detach().numpy().reshape(-1)
    assert buffer.episode_starts[1:].any()  # episodes end within the rollout
    by_hand = {}
    for completed in (True, False):
        returns = np.zeros((64, 2))
        for env in range(2):
            following = after[env] if completed and not model._last_episode_starts[env] else 0.0
            for step in reversed(range(64)):
                following = buffer.rewards[step, env] + gamma * following
                returns[step, env] = following
                if buffer.episode_starts[step, env]:
                    following = 0.0
        by_hand[completed] = returns
    return model, by_hand


def test_returns_explained_scores_ppos_values_against_the_rollouts_monte_carlo_returns():
    model, by_hand = _cartpole_rollout([ReturnsExplained()])
    logged, buffer = model.logger.name_to_value, model.rollout_buffer
    for key, completed in (("returns", True), ("cut_returns", False)):
        returns = by_hand[completed]
        expected = 1 - np.var(returns - buffer.values) / np.var(returns)
        assert logged[f"diagnosis/{key}_explained_variance"] == pytest.approx(expected, rel=1e-6)
    assert logged["diagnosis/returns_explained_variance"] != logged["diagnosis/cut_returns_explained_variance"]


def test_monte_carlo_critic_trains_on_the_completed_returns_and_leaves_the_advantages():
    model, _ = _cartpole_rollout([])
    plain = model.rollout_buffer
    model, by_hand = _cartpole_rollout([MonteCarloCritic()])
    buffer = model.rollout_buffer
    np.testing.assert_allclose(buffer.returns, by_hand[True], rtol=1e-5)
    assert not np.allclose(plain.returns, buffer.returns, rtol=1e-3)  # GAE's lambda-returns differ
    np.testing.assert_array_equal(plain.advantages, buffer.advantages)


def test_explained_report_averages_each_quarter_per_seed_then_over_seeds(tmp_path):
    suite = Suite(["Walker2d-v5"], [Setting("gpg", "gpg"), Setting("ppo", "ppo")], "gpg", 10_000)
    found = {}
    for name, key, offset in (("gpg", "gpg/baseline_explained_variance", 0.0), ("ppo", "train/explained_variance", 0.5)):
        for seed in (0, 1):
            folder = tmp_path / "runs" / f"Walker2d-v5__{name}__seed{seed}"
            folder.mkdir(parents=True)
            # steps 100, 200, ..., 800: two per quarter of 800 steps; values seed + step / 1000 (+ offset)
            logged = {key: [[step, seed + step / 1000 + offset] for step in range(100, 900, 100)]}
            if name == "gpg":  # GPG also prints the in-sample one, which the report must not read
                logged["train/explained_variance"] = [[step, -9.0] for step in range(100, 900, 100)]
            else:  # the suite keeps every key, empty where the training never logged it
                logged["gpg/baseline_explained_variance"] = []
            (folder / "training_log.json").write_text(json.dumps(logged))
            (folder / "meta.json").write_text(json.dumps({"n_timesteps": 800}))
            found.setdefault(("Walker2d-v5", name), {})[seed] = folder
    table = explained_report(suite, found, tmp_path)
    first_quarter = [seed + 0.15 for seed in (0, 1)]  # steps 100 and 200
    assert f"| Walker2d-v5 | gpg | returns | 2 | {np.mean(first_quarter):.2f} ± {np.std(first_quarter):.2f} |" in table
    assert f"| Walker2d-v5 | ppo | lambda-returns | 2 | {np.mean(first_quarter) + 0.5:.2f} ± 0.50 |" in table
    assert "| Walker2d-v5 | gpg | lambda-returns |" not in table
    assert (tmp_path / "explained_variance.png").stat().st_size > 0


@pytest.mark.parametrize("algorithm", [GPG, PPO])
def test_advantage_signal_logs_the_advantages_pull_on_the_noise(algorithm):
    model = algorithm("MlpPolicy", "Pendulum-v1", n_steps=64, batch_size=64, n_epochs=1, seed=0, device="cpu")
    stream = io.StringIO()
    model.set_logger(Logger(folder=None, output_formats=[HumanOutputFormat(stream)]))
    model.learn(128, callback=AdvantageSignal())
    series = logged_series(stream.getvalue(), LOGGED_KEYS)
    # (GPG's first rollout, one cut trajectory and no memory yet, has no baseline other than its own returns: all 0)
    assert len(series["diagnosis/advantage_std"]) == 2 and series["diagnosis/advantage_std"][-1][1] > 0
    assert all(-1 <= value <= 1 for _, value in series["diagnosis/advantage_logstd_corr"])
    assert len(series["diagnosis/advantage_logstd_corr"]) == 2
    assert len(series["diagnosis/mean_gradient_agreement"]) == 2
    assert all(-1 <= value <= 1 for _, value in series["diagnosis/mean_gradient_agreement"])
    assert len(series["diagnosis/advantage_reward_corr"]) == 2


def test_advantage_signal_reads_how_far_the_advantages_follow_their_steps_reward():
    model, callback, _, _, _ = _pendulum_rollout(64)
    buffer = model.rollout_buffer
    noise = np.random.default_rng(2).normal(size=buffer.rewards.shape)
    for advantages, expected in ((-2.0 * buffer.rewards + 3.0, -1.0), (buffer.rewards + noise * buffer.rewards.std(), 0.7)):
        buffer.advantages[:] = advantages
        stream = io.StringIO()
        model.set_logger(Logger(folder=None, output_formats=[HumanOutputFormat(stream)]))
        callback.on_rollout_end()
        model.logger.dump(0)
        (value,) = [value for _, value in logged_series(stream.getvalue(), LOGGED_KEYS)["diagnosis/advantage_reward_corr"]]
        assert value == pytest.approx(expected, abs=0.1)


def _pendulum_rollout(n_steps: int) -> tuple[GPG, AdvantageSignal, th.Tensor, th.Tensor, th.Tensor]:
    """:return: a GPG model after one Pendulum rollout, its signal callback, and the rollout's observations, actions
    and each action's distance from the policy's mean in units of its noise"""
    model = GPG("MlpPolicy", "Pendulum-v1", n_steps=n_steps, batch_size=64, n_epochs=1, seed=0, device="cpu")
    _, callback = model._setup_learn(n_steps, callback=AdvantageSignal())
    callback.on_training_start(locals(), globals())
    model.collect_rollouts(model.env, callback, model.rollout_buffer, n_rollout_steps=model.n_steps)
    observations = th.as_tensor(model.rollout_buffer.observations.reshape(-1, 3))
    actions = th.as_tensor(model.rollout_buffer.actions.reshape(-1, 1))
    # from the policy's own parameters, not through the distribution the callback reads
    with th.no_grad():
        mean = model.policy.action_net(model.policy.mlp_extractor.forward_actor(observations))
        std = model.policy.log_std.exp()
    return model, callback, observations, actions, (actions - mean) / std


def test_advantage_signal_reads_plus_one_where_noisier_actions_did_better():
    model, callback, _, _, noise = _pendulum_rollout(64)
    buffer = model.rollout_buffer
    distance = (noise**2).sum(dim=-1).numpy()
    for sign in (1.0, -1.0):
        buffer.advantages[:] = (sign * (3.0 * distance + 7.0)).reshape(buffer.advantages.shape)  # any scale and offset
        stream = io.StringIO()
        model.set_logger(Logger(folder=None, output_formats=[HumanOutputFormat(stream)]))
        callback.on_rollout_end()
        model.logger.dump(0)
        (value,) = [value for _, value in logged_series(stream.getvalue(), LOGGED_KEYS)["diagnosis/advantage_logstd_corr"]]
        assert value == pytest.approx(sign, abs=1e-3)


def test_mean_gradient_agreement_reads_near_one_where_every_sample_pulls_the_mean_one_way():
    _, callback, observations, actions, noise = _pendulum_rollout(2048)
    noise = noise.numpy()[:, 0].astype(np.float64)
    # advantages that favour actions above the mean everywhere: every part's gradient moves the mean up
    assert callback._agreement(observations, actions, 2.0 * noise + 5.0) > 0.7
    # advantages unrelated to the actions: the parts' gradients cancel
    unrelated = np.random.default_rng(1).normal(size=len(noise))
    assert abs(callback._agreement(observations, actions, unrelated)) < 0.2
