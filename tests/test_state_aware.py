"""
The state-aware estimator: GAE's lambda over the group baselines and the fitted baselines ("linear", "knn"), checked
against the loop-by-loop reference (tests/reference.py) in ``estimate`` with every binning and option, and in every
buffer; their errors,
save/load, and that gae_lambda=1 with baseline="bins" keeps the Monte-Carlo path (returns minus baselines, exactly;
scripts/training_digest.py checks whole trainings against an earlier checkout).
"""

import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from sb3_contrib.common.recurrent.type_aliases import RNNStates
from stable_baselines3.common.env_util import make_vec_env

from sb3_gpg import GPG, GroupDictRolloutBuffer, GroupRolloutBuffer, MaskableGPG, RecurrentGPG
from sb3_gpg.common.maskable.buffers import MaskableGroupRolloutBuffer
from sb3_gpg.common.recurrent.buffers import RecurrentGroupRolloutBuffer
from sb3_gpg.estimator.baseline_memory import BASE_FEATURES
from sb3_gpg.estimator.fitted_baselines import trajectory_folds
from tests.helpers import QUICK_LAMBDA_FIT, RolloutEstimator, assert_estimate_matches, with_seed_of
from tests.reference import ReferenceGPG

N_STEPS, N_ENVS, OBS_DIM, GAMMA = 13, 4, 2, 0.9
OPTIONS = [
    dict(baseline=baseline, gae_lambda=gae_lambda, truncated_returns=truncated)
    for baseline in ("bins", "linear", "knn")
    for gae_lambda in (1.0, 0.8)
    for truncated in ("keep", "mask", "bootstrap")
    if (baseline, gae_lambda) != ("bins", 1.0)
]
BINNINGS = ("time", "spatial_time", "universal")
# the linear baseline's targets under which its levels are checked
LEVEL_TARGETS = ("returns", "lambda_returns")


def option_id(options: dict) -> str:
    return "-".join(str(value) for value in options.values())


def rollouts(seed: int, n_rollouts: int = 2):
    """
    Consecutive random rollouts: observations, rewards, episode starts, last dones and the observation after each; a
    rollout starts where the last one ended (its first row starts an episode where the last one's last step ended it).
    """
    rng = np.random.default_rng(seed)
    last_dones = np.ones(N_ENVS, dtype=bool)
    last_obs = rng.normal(size=(N_ENVS, OBS_DIM)).astype(np.float32)
    for _ in range(n_rollouts):
        observations = rng.normal(size=(N_STEPS, N_ENVS, OBS_DIM)).astype(np.float32)
        observations[0] = last_obs
        rewards = rng.normal(size=(N_STEPS, N_ENVS)).astype(np.float32)
        starts = (rng.random((N_STEPS, N_ENVS)) < 0.2).astype(np.float32)
        starts[0] = last_dones
        last_dones, last_obs = rng.random(N_ENVS) < 0.3, rng.normal(size=(N_ENVS, OBS_DIM)).astype(np.float32)
        yield observations, rewards, starts, last_dones, last_obs


def fill(buffer, observations, rewards, starts, last_dones, last_obs) -> None:
    buffer.reset()
    for step in range(N_STEPS):
        extra = {}
        if isinstance(buffer, MaskableGroupRolloutBuffer):
            extra["action_masks"] = np.ones((N_ENVS, 3))
        if isinstance(buffer, RecurrentGroupRolloutBuffer):
            states = th.zeros(1, N_ENVS, 4)
            extra["lstm_states"] = RNNStates((states, states), (states[..., :0], states[..., :0]))
        buffer.add(observations[step], np.zeros((N_ENVS, 1)), rewards[step], starts[step], th.zeros(N_ENVS), th.zeros(N_ENVS),
                   **extra)  # fmt: skip
    buffer.compute_returns_and_advantage(th.zeros(N_ENVS), last_dones, last_obs=last_obs)


def assert_filled_as_the_reference(buffer, reference, rollout) -> np.ndarray:
    """
    Fill the buffer with the rollout and compare its returns, baselines and advantages with the reference's.

    :return: the reference's baselines
    """
    fill(buffer, *rollout)
    returns, baselines, advantages, _ = reference.advantages(*rollout)
    np.testing.assert_allclose(buffer.returns, returns, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(buffer.values, baselines, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(buffer.advantages, advantages, rtol=1e-4, atol=1e-4)
    return baselines


def make_buffer(buffer_class, gae_lambda, **options):
    extra = {"hidden_state_shape": (N_STEPS, 1, N_ENVS, 4)} if buffer_class is RecurrentGroupRolloutBuffer else {}
    return buffer_class(N_STEPS, spaces.Box(-5, 5, (OBS_DIM,)), spaces.Discrete(3), gae_lambda=gae_lambda, gamma=GAMMA,
                        n_envs=N_ENVS, **options, **extra)  # fmt: skip


def state_aware_kwargs(binning: str, options: dict) -> tuple[float, dict]:
    """
    :return: the entry's gae_lambda, and the group options of it with the binning
    """
    options = dict(options)
    gae_lambda = options.pop("gae_lambda")
    baseline_kwargs = {"n_neighbors": 5} if options["baseline"] == "knn" else None
    if options["baseline"] == "linear" and gae_lambda < 1:
        baseline_kwargs = dict(QUICK_LAMBDA_FIT)
    return gae_lambda, dict(binning=binning, bin_size=0.7, **options, baseline_kwargs=baseline_kwargs)


@pytest.mark.parametrize("binning", BINNINGS)
@pytest.mark.parametrize("options", OPTIONS, ids=option_id)
def test_estimate_matches_the_reference(binning, options):
    gae_lambda, kwargs = state_aware_kwargs(binning, options)
    estimator = RolloutEstimator(N_ENVS, GAMMA, gae_lambda, **kwargs)
    reference = ReferenceGPG(N_ENVS, GAMMA, gae_lambda=gae_lambda, **kwargs)
    for rollout in rollouts(seed=len(binning)):
        assert_estimate_matches(estimator(*rollout), reference.advantages(*rollout), tolerance=1e-4)


@pytest.mark.parametrize("buffer_class", [GroupRolloutBuffer, MaskableGroupRolloutBuffer, RecurrentGroupRolloutBuffer])
@pytest.mark.parametrize("options", [OPTIONS[2], OPTIONS[7], OPTIONS[-1]], ids=option_id)
def test_buffers_match_the_reference(buffer_class, options):
    gae_lambda, kwargs = state_aware_kwargs("spatial_time", options)
    buffer = make_buffer(buffer_class, gae_lambda, **kwargs)
    kwargs["baseline_kwargs"] = with_seed_of(buffer, kwargs["baseline_kwargs"])
    reference = ReferenceGPG(N_ENVS, GAMMA, gae_lambda=gae_lambda, **kwargs)
    for rollout in rollouts(seed=len("spatial_time")):
        fill(buffer, *rollout)
        returns, baselines, advantages, in_group = reference.advantages(*rollout)
        np.testing.assert_allclose(buffer.returns, returns, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(buffer.values[in_group], baselines[in_group], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(buffer.advantages, np.where(in_group, advantages, 0.0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("options", [dict(baseline="linear"), dict(baseline="knn"), dict(gae_lambda=0.8)], ids=str)
def test_state_aware_options_change_the_advantages(options):
    # A guard against options that are read but never reach the advantages
    options = dict(options)
    default, changed = (
        make_buffer(GroupRolloutBuffer, 1.0),
        make_buffer(GroupRolloutBuffer, options.pop("gae_lambda", 1.0), **options),
    )
    for buffer in (default, changed):
        fill(buffer, *next(rollouts(seed=0)))
    assert not np.allclose(default.advantages, changed.advantages)


def test_the_fitted_baselines_explain_a_return_that_depends_on_the_state():
    # Reward = the first coordinate of a state that stays put within an episode: the return is a function of the
    # state, which time bins cannot see and the fitted baselines can
    rng = np.random.default_rng(0)
    observations = np.repeat(rng.normal(size=(1, N_ENVS * 8, OBS_DIM)), N_STEPS, axis=0).astype(np.float32)
    starts = np.zeros((N_STEPS, N_ENVS * 8), dtype=np.float32)
    rewards = observations[..., 0].copy()
    explained = {}
    for baseline in ("bins", "linear", "knn"):
        buffer = GroupRolloutBuffer(N_STEPS, spaces.Box(-5, 5, (OBS_DIM,)), spaces.Discrete(3), gamma=GAMMA,
                                    n_envs=N_ENVS * 8, baseline=baseline)  # fmt: skip
        for step in range(N_STEPS):
            buffer.add(observations[step], np.zeros((N_ENVS * 8, 1)), rewards[step], starts[step], th.zeros(1), th.zeros(1))
        buffer.compute_returns_and_advantage(th.zeros(1), np.ones(N_ENVS * 8, dtype=bool))
        explained[baseline] = buffer.group_stats["baseline_explained_variance"]
    assert explained["bins"] < 0.1 and explained["linear"] > 0.7 and explained["knn"] > 0.5, explained


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(baseline="critic"), r"baseline must be one of \('auto', 'bins', 'linear', 'knn'\)"),
        (dict(baseline="knn", baseline_kwargs={"ridge": 1.0}), "not arguments of baseline='knn'"),
        (dict(baseline="linear", baseline_kwargs={"n_folds": 1}), "at least 2"),
        (dict(baseline="knn", baseline_kwargs={"n_neighbors": 0}), "at least 1"),
        (dict(baseline="linear", baseline_kwargs={"ridge": -1.0}), "must be positive"),
        (dict(baseline="linear", baseline_kwargs={"memory": -1}), r"memory'\] must be at least 0"),
        (dict(baseline="linear", baseline_kwargs={"memory": 2.0}), "must be an integer"),
        (dict(baseline="linear", baseline_kwargs={"recency": 0.0}), r"recency'\] must be in \(0, 1\]"),
        (dict(baseline="knn", baseline_kwargs={"memory": 4}), "not arguments of baseline='knn'"),
        (dict(baseline="linear", baseline_kwargs={"fourier": -8}), r"fourier'\] must be at least 0"),
        (dict(baseline="linear", baseline_kwargs={"recency": "0.5"}), r"recency'\]='0.5' must be a number"),
        (dict(baseline="linear", baseline_kwargs={"fourier_scale": 0.0}), r"fourier_scale'\] must be positive"),
        (dict(baseline="linear", baseline_kwargs={"level": "shared"}), r"level'\] must be one of \('own', 'trend'"),
        (dict(baseline="linear", baseline_kwargs={"memory": 0, "level": "trend"}), r"level'\] is an argument of the memory"),
        (dict(gae_lambda=1.5), r"gae_lambda must be in \[0, 1\]"),
    ],
)
def test_bad_state_aware_options_are_refused_before_any_step(kwargs, match):
    with pytest.raises(ValueError, match=match):
        GPG("MlpPolicy", "CartPole-v1", n_steps=32, batch_size=32, **kwargs)


def test_fitted_baselines_refuse_image_observations():
    from stable_baselines3.common.envs import FakeImageEnv

    with pytest.raises(ValueError, match=r"does not give usable features for \(images"):
        GPG("CnnPolicy", FakeImageEnv(), n_steps=32, batch_size=32, baseline="knn")


@pytest.mark.parametrize("algorithm", [GPG, MaskableGPG, RecurrentGPG])
def test_state_aware_options_survive_save_and_load(algorithm, tmp_path):
    policy = "MlpLstmPolicy" if algorithm is RecurrentGPG else "MlpPolicy"
    env = make_vec_env("CartPole-v1", n_envs=2, seed=0)
    if algorithm is MaskableGPG:
        from sb3_contrib.common.wrappers import ActionMasker

        masked = lambda: ActionMasker(gym.make("CartPole-v1"), lambda _: np.array([True, False]))  # noqa: E731
        env = make_vec_env(masked, n_envs=2, seed=0)
    model = algorithm(
        policy, env, n_steps=32, batch_size=32, gae_lambda=0.9, baseline="linear",
        baseline_kwargs={"ridge": 0.5, "memory": 3, "level": "trend"},
    )  # fmt: skip
    model.learn(128)
    assert len(model.rollout_buffer.baseline_memory) == 2
    model.save(tmp_path / "model")
    loaded = algorithm.load(tmp_path / "model", env=env)
    given = {"ridge": 0.5, "memory": 3, "level": "trend"}
    assert (loaded.gae_lambda, loaded.baseline, loaded.baseline_kwargs) == (0.9, "linear", given)
    # the given arguments over the linear baseline's defaults, with the Fourier features' seed drawn from the model's
    seed = loaded.rollout_buffer.baseline_kwargs["fourier_seed"]
    assert isinstance(seed, int) and loaded.rollout_buffer.baseline_kwargs == {
        "n_folds": 2,
        "ridge": 0.5,
        "memory": 3,
        "recency": 0.8,
        "memory_weight": 1.0,
        "level": "trend",
        "pooled_memory": 0,
        "pooled_recency": 0.9,
        "pooled_choice": "halves",
        "fourier": 256,
        "fourier_scale": None,
        "fourier_seed": seed,
        "choose_size": True,
        "optimism": True,
        "target": "lambda_returns",  # "auto" at gae_lambda 0.9
    }
    assert loaded.rollout_buffer.gae_lambda == 0.9
    # the memory is not saved (SB3 saves no rollouts): the loaded model's starts empty and refills
    assert len(loaded.rollout_buffer.baseline_memory) == 0 and loaded.rollout_buffer.baseline_memory.rollouts.maxlen == 3
    loaded.learn(64)
    assert len(loaded.rollout_buffer.baseline_memory) == 1


def test_the_default_is_the_monte_carlo_path():
    buffer = make_buffer(GroupRolloutBuffer, 1.0)
    fill(buffer, *next(rollouts(seed=0)))
    np.testing.assert_array_equal(buffer.advantages, buffer.returns - buffer.values)


def test_folds_of_one_trajectory_each_choose_their_fit_on_the_others():
    # A trajectory per env, a fold per trajectory, returns set by each trajectory's state: every fold is fitted on
    # three trajectories, which alternate halves, so each can choose a fit that reads the state (the time's features
    # alone predict none of it). Halves drawn within each fold would leave every fold's training set in one half, and
    # every fold, without a memory, on the time's features alone
    n_steps, n_envs = N_STEPS, N_ENVS
    rng = np.random.default_rng(0)
    states = rng.normal(size=(n_envs, 3))
    observations = (states + 0.1 * rng.normal(size=(n_steps + 1, n_envs, 3))).astype(np.float32)
    rewards = (states[:, 0] + 0.1 * rng.normal(size=(n_steps, n_envs))).astype(np.float32)
    starts = np.zeros((n_steps, n_envs), dtype=np.float32)
    starts[0] = 1.0
    buffer = GroupRolloutBuffer(n_steps, spaces.Box(-5, 5, (3,)), spaces.Discrete(2), gamma=1.0, gae_lambda=1.0,
                                n_envs=n_envs, baseline="linear",
                                baseline_kwargs={"memory": 0, "fourier": 0, "n_folds": n_envs})  # fmt: skip
    fill(buffer, observations[:-1], rewards, starts, np.ones(n_envs, dtype=bool), observations[-1])
    assert buffer.group_stats["fit_size"] > BASE_FEATURES


@pytest.mark.parametrize("baseline", ["linear", "knn"])
def test_no_trajectory_returns_enter_its_own_fitted_baseline(baseline):
    # Cross-fitting, checked without the reference: changing one trajectory's rewards moves the returns of that
    # trajectory alone, and must leave that trajectory's own baselines unchanged
    rollout = list(next(rollouts(seed=1, n_rollouts=1)))
    rollout[2][:] = 0.0
    rollout[2][0] = 1.0  # each env's rollout is one trajectory
    rollout[3][:] = True
    baselines = []
    for scale in (1.0, 3.0):
        rewards = rollout[1].copy()
        rewards[:, 0] *= scale
        # (the linear features' seed given: each buffer would draw its own)
        kwargs = {"n_folds": N_ENVS} | ({"fourier_seed": 0} if baseline == "linear" else {})
        buffer = make_buffer(GroupRolloutBuffer, 1.0, baseline=baseline, baseline_kwargs=kwargs)
        fill(buffer, rollout[0], rewards, *rollout[2:])
        baselines.append(buffer.values.copy())
    np.testing.assert_allclose(baselines[0][:, 0], baselines[1][:, 0], rtol=1e-6)
    assert not np.allclose(baselines[0][:, 1:], baselines[1][:, 1:])


def test_a_single_trajectory_keeps_its_bins_baselines():
    rollout = list(next(rollouts(seed=2, n_rollouts=1)))
    rollout[2][:] = 0.0  # one env, one trajectory: nothing to cross-fit from
    buffers = {}
    for baseline in ("bins", "linear"):
        buffers[baseline] = GroupRolloutBuffer(N_STEPS, spaces.Box(-5, 5, (OBS_DIM,)), spaces.Discrete(3), gamma=GAMMA,
                                               n_envs=1, baseline=baseline)  # fmt: skip
        fill_one = [array[:, :1] if array.ndim > 1 else array[:1] for array in rollout]
        buffers[baseline].reset()
        for step in range(N_STEPS):
            buffers[baseline].add(fill_one[0][step], np.zeros((1, 1)), fill_one[1][step], fill_one[2][step], th.zeros(1),
                                  th.zeros(1))  # fmt: skip
        buffers[baseline].compute_returns_and_advantage(th.zeros(1), fill_one[3], last_obs=fill_one[4])
    assert buffers["linear"].group_stats["fitted_baseline_fallback"] == 1.0
    np.testing.assert_array_equal(buffers["linear"].advantages, buffers["bins"].advantages)


@pytest.mark.parametrize("baseline", ["linear", "knn"])
def test_fitted_baselines_read_the_box_parts_of_dict_observations(baseline):
    space = spaces.Dict({"position": spaces.Box(-5, 5, (OBS_DIM,)), "level": spaces.Discrete(3)})
    buffer = GroupDictRolloutBuffer(N_STEPS, space, spaces.Discrete(3), gamma=GAMMA, n_envs=N_ENVS, baseline=baseline,
                                    baseline_kwargs={"n_folds": 3})  # fmt: skip
    reference = ReferenceGPG(N_ENVS, GAMMA, "time", baseline=baseline, baseline_kwargs=with_seed_of(buffer, {"n_folds": 3}))
    rng = np.random.default_rng(3)
    for observations, rewards, starts, last_dones, _ in rollouts(seed=3):
        levels = rng.integers(0, 3, size=(N_STEPS, N_ENVS))
        buffer.reset()
        for step in range(N_STEPS):
            obs = {"position": observations[step], "level": levels[step]}
            buffer.add(obs, np.zeros((N_ENVS, 1)), rewards[step], starts[step], th.zeros(N_ENVS), th.zeros(N_ENVS))
        buffer.compute_returns_and_advantage(th.zeros(N_ENVS), last_dones)
        # The level changes nothing: the reference sees the Box part alone
        _, baselines, _, _ = reference.advantages(observations, rewards, starts, last_dones)
        np.testing.assert_allclose(buffer.values, baselines, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "space",
    [spaces.Discrete(4), spaces.Dict({"a": spaces.Discrete(3), "b": spaces.MultiBinary(2)})],
    ids=["Discrete", "Dict without a Box"],
)
def test_fitted_baselines_refuse_observations_without_box_features(space):
    with pytest.raises(ValueError, match="fits the returns on the Box observations"):
        GroupRolloutBuffer(N_STEPS, space, spaces.Discrete(3), n_envs=N_ENVS, baseline="knn")


def test_the_no_signal_warning_reads_the_fitted_baselines_not_the_bins():
    # Bins of one cell per sample give no signal; the knn baseline over the same group does
    env = make_vec_env("CartPole-v1", n_envs=4, seed=0)
    for baseline, expected in (("bins", 1), ("knn", 0)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = GPG("MlpPolicy", env, n_steps=128, batch_size=512, n_epochs=1, binning="spatial", bin_size=0.001,
                        baseline=baseline, seed=0)  # fmt: skip
            model.learn(3 * 128 * 4)
        assert sum("gives most samples no baseline" in str(warning.message) for warning in caught) == expected


@pytest.mark.parametrize("truncated_returns", ["keep", "bootstrap"])
def test_linear_baseline_stays_within_the_returns_when_envs_end_their_episodes_together(truncated_returns):
    # Four envs in step whose 40-step episodes all end at row 8 of a 16-row rollout, as fixed-length episodes do:
    # dealt env by env, every trajectory before the end fell in one fold and every one after it in the other, and
    # each fold's cubic in the episode time, fitted on times 32-39 only, reached millions at times 0-7
    n_steps, n_envs = 16, 4
    rng = np.random.default_rng(0)
    estimator = RolloutEstimator(n_envs, 0.99, 0.9, baseline="linear", truncated_returns=truncated_returns)
    estimator.next_times[:] = 32
    episode_starts = np.zeros((n_steps, n_envs), dtype=bool)
    episode_starts[8] = True
    dones = np.zeros(n_envs, dtype=bool)
    observations = rng.normal(size=(n_steps, n_envs, 3)).astype(np.float32)
    result = estimator(observations, rng.normal(size=(n_steps, n_envs)), episode_starts, dones, rng.normal(size=(n_envs, 3)))
    low, high = result.returns.min(), result.returns.max()
    if truncated_returns == "bootstrap":
        # a fold's baselines stay within the other folds' returns as its own fit completes them, not quite as their
        # own folds' fits do (the returns): within a tenth of their range of them
        low, high = low - 0.1 * (high - low), high + 0.1 * (high - low)
    assert low <= result.baselines.min() and result.baselines.max() <= high
    assert np.abs(result.advantages).max() < 20


def test_the_linear_baselines_memory_serves_a_rollout_of_one_cut_trajectory():
    # Episodes longer than the rollout (Acrobot's 500 steps in rl_zoo3's PPO entry of 256, InvertedPendulum's balanced
    # ones in its 32): a rollout can hold no complete return, and with one env a single trajectory. The memory's
    # trajectories are all others, so its fit alone gives that trajectory's baseline and completes its cut return, as
    # in the reference; left cut, the returns would enter the memory as if the states before a rollout's end were worth
    # that rollout's rewards alone
    options = dict(binning="time", baseline="linear", truncated_returns="bootstrap")
    buffer = GroupRolloutBuffer(N_STEPS, spaces.Box(-5, 5, (OBS_DIM,)), spaces.Discrete(3), gae_lambda=0.9, gamma=GAMMA,
                                n_envs=1, **options, baseline_kwargs=dict(QUICK_LAMBDA_FIT, memory=2))  # fmt: skip
    memory, none = (with_seed_of(buffer, dict(QUICK_LAMBDA_FIT, memory=size)) for size in (2, 0))
    reference = ReferenceGPG(1, GAMMA, gae_lambda=0.9, **options, baseline_kwargs=memory)
    forgetful = ReferenceGPG(1, GAMMA, gae_lambda=0.9, **options, baseline_kwargs=none)
    rng = np.random.default_rng(11)
    running_on = np.zeros(1, dtype=bool)  # the rollout's last step ends no episode
    for number in range(2):
        observations = rng.normal(size=(N_STEPS, 1, OBS_DIM)).astype(np.float32)
        rewards = rng.normal(size=(N_STEPS, 1)).astype(np.float32)
        starts = np.zeros((N_STEPS, 1), dtype=np.float32)
        starts[0], starts[N_STEPS // 2] = number == 0, number == 0  # the second rollout: one trajectory, cut
        last_obs = rng.normal(size=(1, OBS_DIM)).astype(np.float32)
        buffer.reset()
        for step in range(N_STEPS):
            buffer.add(observations[step], np.zeros((1, 1)), rewards[step], starts[step], th.zeros(1), th.zeros(1))
        buffer.compute_returns_and_advantage(th.zeros(1), running_on, last_obs=last_obs)
        rollout = (observations, rewards, starts, running_on, last_obs)
        returns, baselines, advantages, _ = reference.advantages(*rollout)
        np.testing.assert_allclose(buffer.returns, returns, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(buffer.values, baselines, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(buffer.advantages, advantages, rtol=1e-4, atol=1e-4)
        cut_only, bins_baselines = forgetful.advantages(*rollout)[:2]
    # guard: without a memory the second rollout's return stays cut and its baselines are the bins' (its own returns)
    assert np.abs(buffer.returns - cut_only).min() > 1e-3
    assert np.abs(buffer.values - bins_baselines).min() > 1e-3


def test_folds_are_dealt_in_the_order_trajectories_start():
    # Trajectories numbered env by env (env 0: 0 before the end, 1 after; env 1: 2, 3; ...), starting at rows 0 and 8
    ids = np.repeat(np.arange(8), 8)
    first_rows = np.repeat(np.tile([0, 8], 4), 8)
    folds = trajectory_folds(ids, 2, rows=first_rows + np.tile(np.arange(8), 8))
    for fold in (0, 1):
        assert set(first_rows[folds == fold]) == {0, 8}  # each fold fits on both parts of the rollout
    assert set(first_rows[trajectory_folds(ids, 2) == 0]) == {0}  # in the order of the ids: one part each


@pytest.mark.parametrize("truncated_returns", ["keep", "bootstrap"])
def test_the_linear_baselines_memory_and_fourier_features_match_the_reference_on_continuous_states(truncated_returns):
    kwargs = dict(binning="time", baseline="linear", truncated_returns=truncated_returns)
    memory = dict(memory=2, recency=0.7, fourier=8, fourier_scale=1.5, fourier_seed=3)
    buffer = make_buffer(GroupRolloutBuffer, 0.8, **kwargs, baseline_kwargs=memory)
    reference = ReferenceGPG(N_ENVS, GAMMA, gae_lambda=0.8, **kwargs, baseline_kwargs=memory)
    # guards: each of the memory and the Fourier features changes the baselines
    without = {
        name: ReferenceGPG(N_ENVS, GAMMA, gae_lambda=0.8, **kwargs, baseline_kwargs=dict(memory, **change))
        for name, change in (("memory", dict(memory=0)), ("fourier", dict(fourier=0)))
    }
    changed = {name: [] for name in without}
    for rollout in rollouts(seed=5, n_rollouts=4):
        baselines = assert_filled_as_the_reference(buffer, reference, rollout)
        for name, other in without.items():
            changed[name].append(bool(np.abs(other.advantages(*rollout)[1] - baselines).max() > 1e-3))
    # the memory from the second rollout on; the Fourier features where a fold's fit is chosen large enough to read
    # them (its size is chosen per fold on held-out halves, the time's features alone in some)
    assert changed["memory"] == [False, True, True, True] and any(changed["fourier"]), changed


@pytest.mark.parametrize(
    ("options", "other", "changes"),
    [
        # the target changes the baselines (and with it the memory's and the cut returns' completion)
        (dict(target="lambda_returns"), dict(target="returns"), [True, True, True, True]),
        # the level changes them where rollouts are remembered (the first rollout remembers none; the second one, whose
        # trend over a single remembered rollout is that rollout's own level)
        *[(dict(target=target, level="trend"), dict(level="own"), [False, False, True, True]) for target in LEVEL_TARGETS],
        *[(dict(target=target, level="pooled"), dict(level="own"), [False, True, True, True]) for target in LEVEL_TARGETS],
    ],
    ids=str,
)
@pytest.mark.parametrize("truncated_returns", ["keep", "mask", "bootstrap"])
def test_the_linear_baselines_target_and_level_match_the_reference(options, other, changes, truncated_returns):
    kwargs = dict(binning="time", baseline="linear", truncated_returns=truncated_returns)
    option_kwargs = dict(memory=3, recency=0.7, fourier=8, fourier_seed=3, **options)
    buffer = make_buffer(GroupRolloutBuffer, 0.8, **kwargs, baseline_kwargs=option_kwargs)
    reference = ReferenceGPG(N_ENVS, GAMMA, gae_lambda=0.8, **kwargs, baseline_kwargs=option_kwargs)
    # guard: the option changes the baselines
    without = make_buffer(GroupRolloutBuffer, 0.8, **kwargs, baseline_kwargs=dict(option_kwargs, **other))
    changed = []
    for rollout in rollouts(seed=7, n_rollouts=4):
        assert_filled_as_the_reference(buffer, reference, rollout)
        fill(without, *rollout)
        changed.append(bool(np.abs(without.values - buffer.values).max() > 1e-3))
    assert changed == changes, changed


@pytest.mark.parametrize("level", ["own", "trend"])
def test_a_rollout_whose_every_trajectory_is_masked_is_not_remembered_as_the_reference(level):
    # every env's trajectory runs past the rollout's end: no sample enters the group, and the rollout takes no place in
    # the memory (nor an age in its trend)
    kwargs = dict(binning="time", baseline="linear", truncated_returns="mask",
                  baseline_kwargs=dict(memory=3, fourier=8, fourier_seed=3, level=level))  # fmt: skip
    buffer = make_buffer(GroupRolloutBuffer, 1.0, **kwargs)
    reference = ReferenceGPG(N_ENVS, GAMMA, gae_lambda=1.0, **kwargs)
    for index, rollout in enumerate(rollouts(seed=3, n_rollouts=5)):
        observations, rewards, starts, last_dones, last_obs = rollout
        if index == 2:
            starts, last_dones = np.zeros_like(starts), np.zeros_like(last_dones)
        assert_filled_as_the_reference(buffer, reference, (observations, rewards, starts, last_dones, last_obs))
    assert len(buffer.baseline_memory) == 3 and len(reference.memory) == 3


def test_lambda_returns_near_lambda_one_are_the_returns():
    # GAE's lambda near 1: a lambda-return nears the Monte-Carlo return, and the fit on them the returns' fit (at 1
    # exactly the estimator takes the returns' path: this reads the lambda-returns' terms, cut ones included)
    kwargs = dict(binning="time", baseline="linear", truncated_returns="bootstrap")
    targets = [dict(memory=2, fourier=8, fourier_seed=3, target=target) for target in ("returns", "lambda_returns")]
    buffers = [
        make_buffer(GroupRolloutBuffer, gae_lambda, **kwargs, baseline_kwargs=target)
        for gae_lambda, target in zip((1.0, 1.0 - 1e-9), targets, strict=True)
    ]
    for rollout in rollouts(seed=7, n_rollouts=3):
        for buffer in buffers:
            fill(buffer, *rollout)
        np.testing.assert_allclose(buffers[0].values, buffers[1].values, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("truncated_returns", ["keep", "bootstrap"])
def test_the_lambda_returns_fit_of_a_lone_cut_trajectory_rests_on_the_memory_as_the_reference(truncated_returns):
    # one env whose episode no rollout ends: each rollout's fit has no other trajectory and rests on the memory alone
    kwargs = dict(binning="time", baseline="linear", truncated_returns=truncated_returns,
                  baseline_kwargs=dict(memory=2, fourier=8, fourier_seed=3, target="lambda_returns"))  # fmt: skip
    estimator = RolloutEstimator(1, GAMMA, 0.8, **kwargs)
    reference = ReferenceGPG(1, GAMMA, gae_lambda=0.8, **kwargs)
    rng = np.random.default_rng(11)
    for index in range(4):
        observations = rng.normal(size=(N_STEPS, 1, OBS_DIM)).astype(np.float32)
        starts = np.zeros((N_STEPS, 1), dtype=np.float32)
        starts[0] = index == 0
        rewards = rng.normal(size=(N_STEPS, 1)).astype(np.float32)
        rollout = (observations, rewards, starts, np.zeros(1, dtype=bool), rng.normal(size=(1, OBS_DIM)).astype(np.float32))
        assert_estimate_matches(estimator(*rollout), reference.advantages(*rollout), tolerance=1e-4)
