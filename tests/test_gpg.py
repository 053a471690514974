"""SB3's usual battery for an algorithm, run on GPG, plus GPG's diagnostics and swap guards (bad input: its own module)."""

import warnings
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback, CheckpointCallback, EvalCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.envs import (
    FakeImageEnv,
    IdentityEnv,
    IdentityEnvBox,
    IdentityEnvMultiBinary,
    IdentityEnvMultiDiscrete,
)
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.logger import KVWriter, Logger
from stable_baselines3.common.vec_env import VecNormalize

from sb3_gpg import GPG
from sb3_gpg.common.policies import ActorOnlyPolicy
from sb3_gpg.common.swap_guards.no_signal import FLAT_ROLLOUTS_WARNING, SIGNAL_CHECK_ROLLOUTS, NoSignalCheck, NoSignalWarning
from sb3_gpg.estimator.options import GROUP_OPTION_NAMES
from tests.helpers import SMALL, ActionRecorder, collect_rollout

# SB3's identity tests (its tests/test_identity.py: threshold 90 of 100 over 20 episodes) with a group GPG can learn
# from: every state is drawn afresh, so one bin for all ("universal"), 4 envs x 128 steps per rollout, and a higher
# rate than PPO's default so that a few thousand steps suffice. An untrained policy is right by chance only: about
# half of the steps on Box (eps 0.5 around a state in [-1, 1]), fewer on the others.
IDENTITY = dict(n_steps=128, batch_size=128, n_epochs=10, gamma=0.4, learning_rate=1e-3, binning="universal")


@pytest.mark.slow
@pytest.mark.parametrize(
    "make_env",
    [
        lambda: IdentityEnv(4),
        lambda: IdentityEnvBox(eps=0.5),
        lambda: IdentityEnvMultiDiscrete(4),
        lambda: IdentityEnvMultiBinary(4),
    ],
    ids=["Discrete", "Box", "MultiDiscrete", "MultiBinary"],
)
def test_learns_every_action_space(make_env):
    model = GPG("MlpPolicy", make_vec_env(make_env, n_envs=4, seed=0), seed=0, device="cpu", **IDENTITY).learn(4096)
    mean_return, _ = evaluate_policy(model, make_vec_env(make_env, n_envs=1, seed=100), n_eval_episodes=20, warn=False)
    assert mean_return >= 90


def test_cnn_on_images():
    env = FakeImageEnv(screen_height=36, screen_width=36, n_channels=1, discrete=True)
    model = GPG(
        "CnnPolicy",
        env,
        seed=0,
        n_steps=32,
        batch_size=16,
        n_epochs=1,
        policy_kwargs=dict(features_extractor_kwargs=dict(features_dim=32)),
    )
    model.learn(64)
    assert not any("value" in name or "vf" in name for name, _ in model.policy.named_parameters())


def test_set_env():
    model = GPG("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2), **SMALL).learn(128)
    model.set_env(make_vec_env("CartPole-v1", n_envs=2))
    model.learn(128, reset_num_timesteps=False)
    with pytest.raises(AssertionError):  # SB3 refuses a different number of envs
        model.set_env(make_vec_env("CartPole-v1", n_envs=3))


def test_callbacks(tmp_path):
    class CountSteps(BaseCallback):
        def __init__(self):
            super().__init__()
            self.steps = self.rollouts = 0

        def _on_step(self) -> bool:
            self.steps += 1
            return True

        def _on_rollout_end(self) -> None:
            self.rollouts += 1

    counter = CountSteps()
    eval_callback = EvalCallback(make_vec_env("CartPole-v1"), eval_freq=64, n_eval_episodes=2, log_path=str(tmp_path))
    checkpoint = CheckpointCallback(save_freq=128, save_path=str(tmp_path), name_prefix="gpg")
    GPG("MlpPolicy", "CartPole-v1", **SMALL).learn(256, callback=[counter, eval_callback, checkpoint])
    assert (counter.steps, counter.rollouts) == (256, 4)
    assert len(eval_callback.evaluations_results) == 4
    assert (tmp_path / "gpg_256_steps.zip").exists()


def test_callback_can_stop_training():
    class StopAt(BaseCallback):
        def _on_step(self) -> bool:
            return self.num_timesteps < 10

    model = GPG("MlpPolicy", "CartPole-v1", **SMALL).learn(1000, callback=StopAt())
    assert model.num_timesteps == 10


def test_vec_normalize():
    env = VecNormalize(make_vec_env("Pendulum-v1", n_envs=2), norm_reward=True)
    model = GPG("MlpPolicy", env, binning="spatial_time", bin_size=0.5, **SMALL).learn(256)
    assert np.isfinite(model.rollout_buffer.advantages).all()
    assert env.obs_rms.count > 256


def test_gsde():
    model = GPG("MlpPolicy", "Pendulum-v1", use_sde=True, sde_sample_freq=4, seed=0, **SMALL)
    model.learn(128)
    assert model.policy.use_sde and hasattr(model.policy, "log_std")


@pytest.mark.parametrize("squash_output", [True, False])
def test_gsde_actions_are_stored_as_sampled_and_sent_in_bounds(squash_output):
    # The buffer keeps the policy's own actions (their log-probabilities are the update's reference); the env gets
    # them unscaled from [-1, 1] to its bounds (squashed policy) or clipped to them
    env = ActionRecorder(gym.make("Pendulum-v1"))
    policy_kwargs = dict(squash_output=True) if squash_output else dict(log_std_init=1.0)  # wide: some fall outside
    model = GPG("MlpPolicy", env, use_sde=True, seed=0, policy_kwargs=policy_kwargs, **SMALL)
    stored, sent = collect_rollout(model).actions[:, 0], np.stack(env.actions)
    if squash_output:
        assert np.all(np.abs(stored) <= 1.0)
        np.testing.assert_allclose(sent, 2.0 * stored, atol=1e-6)  # Pendulum's bounds are [-2, 2]
    else:
        assert np.any(np.abs(stored) > 2.0)
        np.testing.assert_array_equal(sent, np.clip(stored, -2.0, 2.0))


def test_several_envs_fill_one_group():
    # Time binning: the episode starts of all envs share one bin, whose baseline is the mean of their returns (the
    # group is the rollout of every env, not each env's own)
    env = make_vec_env("CartPole-v1", n_envs=4, seed=0)
    buffer = collect_rollout(GPG("MlpPolicy", env, seed=0, baseline="bins", **SMALL))
    starts = buffer.episode_times == 0
    assert starts.any(axis=0).all() and len(np.unique(buffer.returns[starts])) > 1  # each env starts, returns differ
    np.testing.assert_allclose(buffer.values[starts], buffer.returns[starts].mean(), rtol=1e-6)


def test_same_seed_gives_same_results():
    def train(seed):
        model = GPG("MlpPolicy", "CartPole-v1", seed=seed, device="cpu", **SMALL).learn(256)
        return th.nn.utils.parameters_to_vector(model.policy.parameters())

    th.testing.assert_close(train(3), train(3), rtol=0, atol=0)
    assert not th.equal(train(3), train(4))


def test_time_limit_truncation_is_not_bootstrapped():
    env = make_vec_env("CartPole-v1", n_envs=2, env_kwargs=dict(max_episode_steps=5))
    model = GPG("MlpPolicy", env, **SMALL)
    model.learn(64)
    # SB3 adds gamma * V(terminal obs) to the reward of a truncated step; GPG's policy returns V = 0
    np.testing.assert_array_equal(model.rollout_buffer.rewards, 1.0)


def test_actor_only_policy_has_no_value_parameters():
    gpg = GPG("MlpPolicy", "CartPole-v1")
    ppo = PPO("MlpPolicy", "CartPole-v1")
    assert isinstance(gpg.policy, ActorOnlyPolicy)
    names = [name for name, _ in gpg.policy.named_parameters()]
    assert not any("value" in name or "vf" in name for name in names), names
    n_gpg = sum(p.numel() for p in gpg.policy.parameters())
    n_ppo = sum(p.numel() for p in ppo.policy.parameters())
    n_ppo_actor = sum(p.numel() for name, p in ppo.policy.named_parameters() if "value" not in name)
    assert n_gpg == n_ppo_actor  # the actor's alone: 4*64+64 + 64*64+64 + 64*2+2 = 4610
    assert n_gpg / n_ppo < 0.55
    obs = th.zeros((3, 4))
    th.testing.assert_close(gpg.policy.predict_values(obs), th.zeros((3, 1)))


def test_custom_net_arch(device):
    policy_kwargs = dict(net_arch=[32], activation_fn=th.nn.ReLU, ortho_init=False)
    model = GPG("MlpPolicy", "CartPole-v1", policy_kwargs=policy_kwargs, device=device)
    w1, b1, w2, b2 = model.policy.parameters()  # one hidden layer, and no critic's parameters beside it
    obs = th.randn(16, 4, device=model.device)
    logits = th.relu(obs @ w1.T + b1) @ w2.T + b2
    th.testing.assert_close(model.policy.get_distribution(obs).distribution.logits, th.log_softmax(logits, dim=1))


def test_ppo_snippet_runs_with_gpg_and_warns_once():
    ppo_kwargs = dict(
        n_steps=64,
        batch_size=32,
        n_epochs=2,
        gae_lambda=0.98,
        vf_coef=0.5,
        clip_range_vf=0.2,
        ent_coef=0.01,
        policy_kwargs=dict(net_arch=dict(pi=[32, 32], vf=[64, 64]), share_features_extractor=False),
    )
    PPO("MlpPolicy", "CartPole-v1", **ppo_kwargs).learn(128)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = GPG("MlpPolicy", "CartPole-v1", **ppo_kwargs).learn(128)
    ignored = [w for w in caught if "GPG has no critic" in str(w.message)]
    assert len(ignored) == 1
    for name in ("vf_coef=0.5", "clip_range_vf=0.2", "net_arch['vf']", "share_features_extractor"):
        assert name in str(ignored[0].message)
    # GAE's lambda is GPG's too (over the group baselines): used, not ignored
    assert "gae_lambda" not in str(ignored[0].message)
    assert model.gae_lambda == model.rollout_buffer.gae_lambda == 0.98
    assert model.policy.net_arch == [32, 32]


def test_no_warning_without_ppo_only_settings(device):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # SB3's own advice to run an MLP on the CPU, which it gives on a GPU: not one of GPG's PPO-settings warnings
        warnings.filterwarnings("ignore", message=r"You are trying to run \w+ on the GPU", category=UserWarning)
        GPG("MlpPolicy", "CartPole-v1", device=device, **SMALL)


class CaptureLog(KVWriter):
    def __init__(self):
        self.records = []

    def write(self, key_values, key_excluded, step=0):
        self.records.append(dict(key_values))


def test_group_diagnostics_are_logged():
    capture = CaptureLog()
    model = GPG("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2), **SMALL)
    model.set_logger(Logger(folder=None, output_formats=[capture]))
    model.learn(256)
    last = capture.records[-1]
    # Every diagnostic reaches the logs (TensorBoard, CSV) whatever the verbosity
    assert {f"gpg/{key}" for key in model.rollout_buffer.group_stats} - set(last) == {"gpg/baseline_explained_variance"}
    for key in (
        "n_bins",
        "returns_per_bin",
        "own_trajectory_only_share",
        "n_trajectories",
        "truncated_share",
        "zero_advantage_share",
        "end_advantage_share",
        "end_sample_share",
    ):
        assert f"gpg/{key}" in last
    assert 0 <= last["gpg/truncated_share"] <= 1
    # Logged by the update, which SB3 runs after printing the rollout's table: the previous rollout's values
    assert {"train/baseline_explained_variance", "gpg/in_sample_explained_variance"} <= set(last)
    assert "train/explained_variance" not in last  # no critic


@pytest.mark.parametrize("verbose", [1, 2])
def test_verbose_1_prints_a_few_gpg_rows_and_verbose_2_all(verbose, capsys):
    model = GPG("MlpPolicy", "CartPole-v1", verbose=verbose, **SMALL).learn(128)
    rows = {line.split("|")[1].strip() for line in capsys.readouterr().out.splitlines() if line.startswith("|    ")}
    assert "baseline_explained_variance" in rows and "explained_variance" not in rows
    printed = {key for key in (*model.rollout_buffer.group_stats, "in_sample_explained_variance") if key in rows}
    everything = {*model.rollout_buffer.group_stats, "in_sample_explained_variance"} - {"advantage_time"}
    assert printed - {"advantage_time"} == ({"n_trajectories", "zero_advantage_share", "baseline_explained_variance"}
                                            if verbose == 1 else everything)  # fmt: skip


def test_tensorboard_log_writes_event_files_with_the_gpg_keys(tmp_path):
    pytest.importorskip("tensorboard", reason='pip install "sb3-gpg[tensorboard]"')
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    GPG("MlpPolicy", "CartPole-v1", tensorboard_log=str(tmp_path), seed=0, **SMALL).learn(256, tb_log_name="run")
    (run_dir,) = tmp_path.iterdir()
    scalars = EventAccumulator(str(run_dir)).Reload().Tags()["scalars"]
    assert {"gpg/n_bins", "gpg/truncated_share", "train/policy_gradient_loss", "rollout/ep_rew_mean"} <= set(scalars)


def test_masked_samples_stay_out_of_the_loss(device):
    # Episodes of 10 steps whatever the actions: the rollout of 64 steps ends 4 steps into its seventh episode, which
    # is cut, on any device and random stream
    model = GPG("MlpPolicy", IdentityEnv(4, ep_length=10), truncated_returns="mask", seed=0, device=device, **SMALL)
    model.learn(64)
    buffer = model.rollout_buffer
    assert buffer.in_loss is not None  # the episode at the rollout's end is cut
    batches = list(buffer.get(16))
    n_in_loss = int(buffer.in_loss.sum())
    assert sum(len(batch.advantages) for batch in batches) == n_in_loss < 64
    # Full minibatches of the samples in the loss (only the last may be short), each of them exactly once
    assert [len(batch.advantages) for batch in batches[:-1]] == [16] * (len(batches) - 1)
    drawn = th.cat([batch.advantages for batch in batches]).sort().values
    np.testing.assert_array_equal(drawn.cpu().numpy(), np.sort(buffer.advantages.flatten()[buffer.in_loss]))


@pytest.mark.slow
def test_learns_cartpole_within_a_step_budget():
    """
    GPG with its defaults (PPO's, and the linear baseline on these Box observations) on CartPole-v1: six rollouts of
    2,048 steps, seed 0 (the budget was chosen on the tuning seeds 100-104, each well above the threshold there)
    """
    model = GPG("MlpPolicy", "CartPole-v1", seed=0, device="cpu")
    model.learn(6 * 2048)
    eval_env = make_vec_env("CartPole-v1", n_envs=1, seed=1000)
    mean_return, _ = evaluate_policy(model, eval_env, n_eval_episodes=20, deterministic=True)
    assert mean_return >= 195


# Swap guards: a group that gives no signal, a file saved by another algorithm


def no_signal_warnings(
    env_id: str, n_envs: int, n_steps: int, rollouts: int, match: str = "GPG's group gives most samples no baseline", **kwargs
) -> list[str]:
    env = make_vec_env(env_id, n_envs=n_envs, seed=0, env_kwargs={"render_mode": None, **kwargs.pop("env_kwargs", {})})
    # One minibatch per rollout and epoch: the check reads the rollouts, the update only costs time here
    model = GPG("MlpPolicy", env, n_steps=n_steps, batch_size=n_steps * n_envs, n_epochs=1, seed=0, **kwargs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.learn(rollouts * n_steps * n_envs)
    return [str(warning.message) for warning in caught if match in str(warning.message)]


def shipped_and_paper_settings():
    from pathlib import Path

    import yaml

    from sb3_gpg_bench.experiments import shared_hyperparameters

    repository = Path(__file__).resolve().parents[1]
    entries = yaml.safe_load((repository / "sb3_gpg" / "hyperparams" / "gpg.yml").read_text())
    for env_id, entry in entries.items():
        if env_id == "default":
            continue
        group = {key: entry[key] for key in GROUP_OPTION_NAMES if key in entry}
        # RL Zoo's defaults where an entry has none: 1 env, SB3's n_steps
        yield pytest.param(env_id, entry.get("n_envs", 1), entry.get("n_steps", 2048),
                           {**group, "env_kwargs": entry.get("env_kwargs", {})}, id=f"gpg.yml-{env_id}")  # fmt: skip
    # The paper grid's settings at 1 env, the smallest group (more envs only add trajectories to every bin), where GPG
    # gets a signal; CliffWalking at 1 env does not (a 128-step rollout holds one unfinished random walk: see below)
    for env_id in ("CartPole-v1", "LunarLander-v3", "HalfCheetah-v5"):
        n_steps = shared_hyperparameters(env_id, 1, None)[0]["n_steps"]
        yield pytest.param(env_id, 1, n_steps, {}, id=f"paper-{env_id}-1env")
    yield pytest.param("CliffWalking-v1", 4, 128, {}, id="paper-CliffWalking-v1-4envs")


@pytest.mark.parametrize("env_id, n_envs, n_steps, kwargs", list(shipped_and_paper_settings()))
def test_no_signal_warning_is_silent_where_the_group_has_one(env_id, n_envs, n_steps, kwargs):
    # All the rollouts the check reads (a shorter learn() call is checked on fewer): the shipped settings and the
    # paper's must not set the warning off
    assert no_signal_warnings(env_id, n_envs, n_steps, rollouts=SIGNAL_CHECK_ROLLOUTS, **kwargs) == []


@pytest.mark.parametrize(
    "env_id, n_steps",
    [
        ("CartPole-v1", 8),  # a PPO entry's tiny rollout: 8 samples, about one trajectory, each its own baseline
        ("CliffWalking-v1", 128),  # the paper's 1-env setting: a random walk outlasts the rollout
    ],
)
def test_no_signal_warning_fires_once_per_learn_call_with_the_numbers(env_id, n_steps):
    (message,) = no_signal_warnings(env_id, 1, n_steps, rollouts=6, baseline="bins")
    assert "100% of the samples had only their own trajectory in their bin" in message
    assert f"n_steps x n_envs = {n_steps} x 1 samples" in message and "a longer n_steps" in message


FLAT = "rollouts in a row"


@pytest.mark.slow
def test_equal_returns_rollout_after_rollout_warn_once_at_any_point():
    # MountainCar-v0's 200-step episodes fill 200-step rollouts exactly, and a random policy never reaches the goal:
    # every time bin holds the same return of -1 per step, so every advantage is 0, from the first rollout to the last
    (message,) = no_signal_warnings("MountainCar-v0", 2, 200, FLAT_ROLLOUTS_WARNING + 5, match=FLAT, baseline="bins")
    assert f"no signal for {FLAT_ROLLOUTS_WARNING} rollouts in a row" in message and "n_envs" in message
    assert no_signal_warnings("MountainCar-v0", 2, 200, FLAT_ROLLOUTS_WARNING - 1, match=FLAT, baseline="bins") == []
    # Under the linear baseline without its optimism the advantages are its fit's noise, and it warns alike
    no_optimism = dict(baseline_kwargs={"optimism": False})
    (message,) = no_signal_warnings("MountainCar-v0", 2, 200, FLAT_ROLLOUTS_WARNING + 5, match=FLAT, **no_optimism)
    assert "the fitted baseline's noise" in message
    # with it (the default, under which "auto" takes PPO's lambda), the raised baselines point the advantages where the
    # fit has seen least: not flat
    assert no_signal_warnings("MountainCar-v0", 2, 200, FLAT_ROLLOUTS_WARNING + 5, match=FLAT) == []
    assert no_signal_warnings("CartPole-v1", 2, 64, FLAT_ROLLOUTS_WARNING + 2, match=FLAT) == []
    # Where returns differ (CartPole's episodes end at different times), it stays silent
    assert no_signal_warnings("CartPole-v1", 2, 64, FLAT_ROLLOUTS_WARNING + 2, match=FLAT, baseline="bins") == []
    # The fix it names first: a baseline of the state's cell, blind to the time, with lambda-returns over it gives the
    # same goal-less rollouts advantages (cells of about one standard deviation of a random policy's position and
    # velocity, what the default bin_size gives after VecNormalize)
    spatial = dict(binning="spatial", bin_size=[0.18, 0.014], gae_lambda=0.95)
    assert no_signal_warnings("MountainCar-v0", 2, 200, FLAT_ROLLOUTS_WARNING + 2, match=FLAT, **spatial) == []


@pytest.mark.parametrize(
    "options",
    [
        dict(baseline="auto", baseline_kwargs={"memory": 0, "fourier": 0}),
        dict(baseline="bins"),
        dict(baseline="bins", truncated_returns="mask"),
    ],
)
def test_rollouts_shorter_than_the_episodes_warn_that_every_return_was_cut(options):
    # Pendulum's 200-step episodes outlast 16-step rollouts of 1 env: the first 12 hold no episode's end, so nothing
    # to compare the one trajectory with (under "mask", no sample left in the loss); the cause is the rollout's length
    (message,) = no_signal_warnings("Pendulum-v1", 1, 16, FLAT_ROLLOUTS_WARNING + 2, match=FLAT, **options)
    assert "no episode ended inside most of them" in message and "n_steps=16" in message
    assert "sparse reward" not in message


def test_the_default_memory_completes_cut_returns_from_the_rollouts_it_remembers():
    # The same cut rollouts under the default's remembering baseline: from the second on, the cut returns are
    # bootstrapped from the fit on the rollouts before (n-step targets, as a critic's), so they carry advantages
    stats: list[dict[str, float]] = []

    class RecordStats(BaseCallback):
        def _on_step(self) -> bool:
            return True

        def _on_rollout_end(self) -> None:
            stats.append(dict(self.model.rollout_buffer.group_stats))

    env = make_vec_env("Pendulum-v1", n_envs=1, seed=0)
    model = GPG("MlpPolicy", env, n_steps=16, batch_size=16, n_epochs=1, seed=0, device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NoSignalWarning)  # the first rollouts' own-trajectory bins, checked elsewhere
        model.learn(3 * 16, callback=RecordStats())
    assert [s["truncated_share"] for s in stats] == [1.0, 1.0, 1.0]
    assert stats[0]["zero_advantage_share"] == 1.0  # nothing remembered yet
    assert all(s["zero_advantage_share"] == 0.0 and s["bootstrapped_share"] == 1.0 for s in stats[1:])


def flat_check_messages(rollouts: list[dict[str, float]]) -> list[str]:
    """The flat-rollouts warnings of one learn call over these rollouts' diagnostics, past the first rollouts' check."""
    model = SimpleNamespace(rollout_buffer=SimpleNamespace(baseline="bins"), num_timesteps=0, n_steps=8, verbose=0)
    check = NoSignalCheck()
    check.rollouts = [{}] * SIGNAL_CHECK_ROLLOUTS
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for stats in rollouts:
            check.record(stats, model)
    assert all(warning.category is NoSignalWarning for warning in caught)
    return [str(warning.message) for warning in caught]


def test_the_flat_check_warns_once_per_cause_and_learn_call():
    equal = dict(zero_advantage_share=1.0, truncated_share=0.0)
    cut = dict(zero_advantage_share=1.0, truncated_share=1.0)
    signal = dict(zero_advantage_share=0.5, truncated_share=0.0)
    # Runs broken by one rollout with a signal: one warning, not one per run
    (message,) = flat_check_messages(([equal] * FLAT_ROLLOUTS_WARNING + [signal]) * 3)
    assert "sparse reward" in message
    # A run whose cause changes: each cause once, as it takes over the last rollouts
    first, second = flat_check_messages([cut] * FLAT_ROLLOUTS_WARNING + [equal] * FLAT_ROLLOUTS_WARNING)
    assert "no episode ended inside most of them" in first and "sparse reward" in second
    # Mostly cut: the rollout's length is named, not equal returns
    (message,) = flat_check_messages([equal] * (FLAT_ROLLOUTS_WARNING // 2 - 1) + [cut] * (FLAT_ROLLOUTS_WARNING // 2 + 1))
    assert "no episode ended inside most of them" in message
    assert flat_check_messages([cut] * (FLAT_ROLLOUTS_WARNING - 1) + [signal] + [cut] * (FLAT_ROLLOUTS_WARNING - 1)) == []
