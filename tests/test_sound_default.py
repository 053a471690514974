"""
The default estimator's promises, each checked by perturbing its input rather than against a reference that shares its
design: no trajectory in its own baseline (the bootstrap of cut returns and the memory included), no lag when the
returns drift, a cost flat in the observation's size, no over-fit on small first rollouts, a fit that does not depend
on the observations' units, state that follows the model (seed, ``set_env``, an estimate computed twice), and one
default everywhere.
"""

import gymnasium as gym
import numpy as np
import pytest
import torch as th
import yaml
from gymnasium import spaces
from stable_baselines3.common.env_util import make_vec_env

from sb3_gpg import GPG
from sb3_gpg.common.buffers import GroupRolloutBuffer
from sb3_gpg.estimator.baseline_memory import BASE_FEATURES
from tests.reference import ReferenceGPG
from tests.test_state_aware import GAMMA, N_ENVS, fill, make_buffer, rollouts


def run(buffer, rollout, scale_env=None, scale=1.0, first_row=0, shift=0.0):
    """:param shift: added to the env's observations after its row ``first_row`` (its trajectory's later states)"""
    observations, rewards, starts, last_dones, last_obs = rollout
    rewards, observations = rewards.copy(), observations.copy()
    if scale_env is not None:
        rewards[first_row:, scale_env] *= scale
        observations[first_row + 1 :, scale_env] += shift
    fill(buffer, observations, rewards, starts, last_dones, last_obs)
    return buffer.values.copy(), buffer.returns.copy()


def all_cut(rollout):
    """The rollout with no episode ending inside it: each env's rollout one trajectory, cut by the rollout's end."""
    observations, rewards, starts, last_dones, last_obs = rollout
    return [observations, rewards, np.zeros_like(starts), np.zeros_like(last_dones), last_obs]


# the linear baseline fitted on its own lambda-returns too: the lambda-returns of the other folds, over its values
LAMBDA_TARGET = {"target": "lambda_returns"}


@pytest.mark.parametrize("baseline", ["linear", "linear on lambda-returns", "knn"])
@pytest.mark.parametrize("trajectory", ["complete", "cut", "all cut"])
@pytest.mark.parametrize("history", [0, 2])
def test_changing_one_trajectory_moves_none_of_its_own_baselines_with_the_cut_returns_bootstrapped(
    baseline, trajectory, history
):
    # The trajectory changed is an env's last one: complete (its return completes the other folds' cut ones), cut,
    # or cut in a rollout where every trajectory is
    if baseline == "knn" and history:
        pytest.skip("knn has no memory")
    earlier = list(rollouts(seed=5, n_rollouts=history + 1))
    last = list(earlier.pop())
    if trajectory == "all cut":
        last = all_cut(last)
    env = 0
    last[3][env] = trajectory == "complete"
    kwargs = {"memory": 2, "fourier_seed": 0} if baseline.startswith("linear") else {}
    gae_lambda = 1.0
    if baseline == "linear on lambda-returns":
        baseline, gae_lambda, kwargs = "linear", 0.8, {**kwargs, **LAMBDA_TARGET}
    starts = last[2][:, env]
    first_row = int(np.flatnonzero(starts)[-1]) if starts.any() else 0
    results = []
    # its rewards scaled; then its later states moved too (its own baselines there read them: its first one is compared)
    for scale, shift in ((1.0, 0.0), (5.0, 0.0), (5.0, 3.0)):
        buffer = make_buffer(
            GroupRolloutBuffer, gae_lambda, baseline=baseline, truncated_returns="bootstrap", baseline_kwargs=kwargs
        )
        for rollout in earlier:
            run(buffer, rollout)
        values, returns = run(buffer, last, scale_env=env, scale=scale, first_row=first_row, shift=shift)
        results.append((values[first_row:, env], returns[first_row:, env], values))
    (own_before, returns_before, all_before), (own_after, returns_after, all_after), (own_moved, _, all_moved) = results
    assert not np.allclose(returns_before, returns_after), "the perturbation changes the trajectory's returns"
    np.testing.assert_allclose(own_before, own_after, rtol=1e-6, atol=1e-6)
    assert not np.allclose(all_before, all_after), "other trajectories' baselines read it"
    if baseline == "knn":
        return  # its features are standardised over the whole group: its own states set their scale
    np.testing.assert_allclose(own_before[0], own_moved[0], rtol=1e-6, atol=1e-6)
    assert len(own_before) == 1 or not np.allclose(all_after, all_moved), "other trajectories' baselines read its states"


GAMMA_DRIFT = 0.99


def drifting_rollouts(scales, n_envs=8, n_steps=512, episode=1000, seed=0):
    """
    A task whose rewards are ``scale`` a step (one scale a rollout), in episodes of ``episode`` steps; the envs' first
    episodes are shorter, staggered, so that rollouts of ``n_steps`` cut the episodes at all times; observations are
    noise. Yields each rollout and the true value of each env's state after it (under that rollout's scale).
    """
    rng = np.random.default_rng(seed)
    times = np.zeros(n_envs, dtype=np.int64)
    lengths = episode - np.arange(n_envs) * episode // n_envs
    last_dones = np.ones(n_envs, dtype=bool)
    for scale in scales:
        observations = rng.normal(size=(n_steps, n_envs, 3)).astype(np.float32)
        starts = np.zeros((n_steps, n_envs), dtype=np.float32)
        rewards = np.full((n_steps, n_envs), scale, dtype=np.float32)
        for step in range(n_steps):
            starts[step] = times == 0
            times += 1
            ended = times == lengths
            times[ended], lengths[ended] = 0, episode
        last_dones = times == 0
        true_values = scale * (1 - GAMMA_DRIFT ** (lengths - times)) / (1 - GAMMA_DRIFT)
        yield (observations, rewards, starts, last_dones, rng.normal(size=(n_envs, 3)).astype(np.float32)), true_values


def bootstrap_ratios(scales, lambda_target=False, baseline_kwargs=None):
    """
    :param lambda_target: the default fitted on its own lambda-returns (GAE's lambda 0.95) rather than the returns
    :param baseline_kwargs: the linear baseline's arguments over the default's
    :return: per rollout, the default's mean value of the cut envs' states after it over their true mean value
    """
    target = {"gae_lambda": 0.95} if lambda_target else {}
    kwargs = {**(LAMBDA_TARGET if lambda_target else {}), **(baseline_kwargs or {})}
    buffer = GroupRolloutBuffer(512, spaces.Box(-5, 5, (3,)), spaces.Discrete(2), gamma=GAMMA_DRIFT, n_envs=8,
                                baseline="auto", truncated_returns="bootstrap", baseline_kwargs=kwargs, **target)  # fmt: skip
    ratios = []
    for (observations, rewards, starts, last_dones, last_obs), true_values in drifting_rollouts(scales):
        buffer.reset()
        for step in range(len(rewards)):
            buffer.add(observations[step], np.zeros((8, 1)), rewards[step], starts[step], th.zeros(8), th.zeros(8))
        buffer.compute_returns_and_advantage(th.zeros(8), last_dones, last_obs=last_obs)
        cut = ~last_dones
        # the value the bootstrap gave each cut env: its completed return less the reward, at its last row
        added = buffer.returns[-1, cut] - rewards[-1, cut]
        ratios.append(float(added.sum() / (GAMMA_DRIFT * true_values[cut]).sum()))
    return np.array(ratios)


@pytest.mark.parametrize("lambda_target", [False, True], ids=["returns", "lambda-returns"])
def test_the_default_bootstrap_follows_returns_that_grow_five_percent_a_rollout(lambda_target):
    ratios = bootstrap_ratios(1.05 ** np.arange(10), lambda_target)
    assert np.all(np.abs(ratios[2:] - 1) <= 0.05), ratios


@pytest.mark.parametrize("lambda_target", [False, True], ids=["returns", "lambda-returns"])
def test_the_default_bootstrap_follows_a_doubling_of_the_rewards_within_two_rollouts(lambda_target):
    ratios = bootstrap_ratios([1.0] * 8 + [2.0] * 4, lambda_target)
    assert abs(ratios[8 + 2] - 1) <= 0.10, ratios


# a long memory that may outweigh the rollout, where its levels are not each rollout's own
LONG_MEMORY = {"memory": 32, "recency": 0.9, "memory_weight": None}


@pytest.mark.parametrize("lambda_target", [False, True], ids=["returns", "lambda-returns"])
def test_a_trend_of_the_levels_follows_returns_that_grow_steadily_where_a_pooled_level_lags(lambda_target):
    growth = 1.05 ** np.arange(20)
    trend = bootstrap_ratios(growth, lambda_target, {**LONG_MEMORY, "level": "trend"})
    assert np.all(np.abs(trend[2:] - 1) <= 0.05), trend
    pooled = bootstrap_ratios(growth, lambda_target, {**LONG_MEMORY, "level": "pooled"})
    assert pooled[-1] < 0.9, pooled


def memory_bytes(buffer) -> int:
    """The bytes of every array the buffer's baseline memory holds, however it holds them."""
    seen, total = set(), 0

    def walk(item):
        nonlocal total
        if id(item) in seen:
            return
        seen.add(id(item))
        if isinstance(item, np.ndarray):
            total += item.nbytes
        elif isinstance(item, (list, tuple, set)) or type(item).__name__ == "deque":
            for part in item:
                walk(part)
        elif isinstance(item, dict):
            for part in item.values():
                walk(part)
        elif hasattr(item, "__dict__"):
            walk(vars(item))

    walk(buffer.baseline_memory)
    return total


@pytest.mark.parametrize("lambda_target", [False, True], ids=["returns", "lambda-returns"])
def test_the_defaults_memory_does_not_grow_with_the_observations_size(lambda_target):
    target = {"gae_lambda": 0.95, "baseline_kwargs": LAMBDA_TARGET} if lambda_target else {}
    sizes = {}
    for obs_dim in (100, 3000):
        rng = np.random.default_rng(0)
        buffer = GroupRolloutBuffer(32, spaces.Box(-5, 5, (obs_dim,)), spaces.Discrete(2), gamma=0.99, n_envs=4,
                                    baseline="auto", truncated_returns="bootstrap", **target)  # fmt: skip
        for _ in range(3):
            buffer.reset()
            for step in range(32):
                starts = np.full(4, step % 10 == 0, dtype=np.float32)
                buffer.add(rng.normal(size=(4, obs_dim)).astype(np.float32), np.zeros((4, 1)),
                           rng.normal(size=4).astype(np.float32), starts, th.zeros(4), th.zeros(4))  # fmt: skip
            buffer.compute_returns_and_advantage(th.zeros(4), np.zeros(4, dtype=bool), last_obs=rng.normal(size=(4, obs_dim)))
        sizes[obs_dim] = memory_bytes(buffer)
    assert sizes[100] > 0
    assert sizes[3000] <= 1.1 * sizes[100], sizes


def test_the_linear_fit_does_not_depend_on_the_observations_units():
    # Standardised features and a ridge scaled to the data: observations 100 times smaller (inside the clip range)
    # give the same baselines
    rollout = list(next(rollouts(seed=2, n_rollouts=1)))
    baselines = []
    for unit in (1.0, 0.01):
        observations, last_obs = rollout[0] * unit, rollout[4] * unit
        buffer = make_buffer(GroupRolloutBuffer, 1.0, baseline="linear", baseline_kwargs={"fourier": 0, "memory": 0})
        fill(buffer, observations, rollout[1], rollout[2], rollout[3], last_obs)
        baselines.append(buffer.values.copy())
    np.testing.assert_allclose(baselines[0], baselines[1], rtol=1e-4, atol=1e-4)


def time_only_explained_variance(buffer, n_steps, n_envs) -> float:
    """The out-of-fold explained variance of a ridge fit on the cubic in the episode time alone, on the buffer's folds."""
    returns, times, starts = buffer.returns, buffer.episode_times / 100.0, buffer.episode_starts
    trajectories = []  # (first row, env, rows)
    for env in range(n_envs):
        rows = []
        for step in range(n_steps):
            if (step == 0 or starts[step, env]) and rows:
                trajectories.append((rows[0], env, rows))
                rows = []
            rows.append(step)
        trajectories.append((rows[0], env, rows))
    trajectories.sort(key=lambda t: (t[0], t[1]))
    fold_of = {}
    for number, (_, env, rows) in enumerate(trajectories):
        for row in rows:
            fold_of[row, env] = number % 2
    predictions = np.zeros_like(returns, dtype=np.float64)
    for fold in (0, 1):
        train = [(row, env) for (row, env), f in fold_of.items() if f != fold]
        x = np.array([[1, times[r, e], times[r, e] ** 2, times[r, e] ** 3] for r, e in train])
        y = np.array([returns[r, e] for r, e in train])
        weights = np.linalg.lstsq(x, y, rcond=None)[0]
        for (row, env), f in fold_of.items():
            if f == fold:
                t = times[row, env]
                predictions[row, env] = weights @ [1, t, t * t, t**3]
    return float(1 - np.var(returns - predictions) / np.var(returns))


def test_the_first_rollouts_fit_is_no_worse_out_of_fold_than_the_time_only_fit():
    # With an empty memory, a rollout of 8 envs x 32 steps of CartPole under random actions (128 samples a fold)
    default, time_only = [], []
    for seed in range(8):
        env = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(8)])
        obs, _ = env.reset(seed=seed)
        env.action_space.seed(seed)
        buffer = GroupRolloutBuffer(32, env.single_observation_space, env.single_action_space, gamma=0.99, n_envs=8,
                                    baseline="auto", truncated_returns="keep")  # fmt: skip
        starts = np.ones(8, dtype=np.float32)
        for _ in range(32):
            action = env.action_space.sample()
            new_obs, rewards, terminated, truncated, _ = env.step(action)
            buffer.add(obs, action.reshape(8, 1), rewards, starts, th.zeros(8), th.zeros(8))
            obs, starts = new_obs, (terminated | truncated).astype(np.float32)
        buffer.compute_returns_and_advantage(th.zeros(8), starts.astype(bool), last_obs=obs)
        default.append(buffer.group_stats["baseline_explained_variance"])
        time_only.append(time_only_explained_variance(buffer, 32, 8))
    assert np.median(default) >= np.median(time_only) - 0.05, (default, time_only)


@pytest.mark.parametrize("choose_size", [True, False])
def test_a_fit_not_choosing_its_size_reads_the_observation_where_the_time_explains_the_returns(choose_size):
    # Returns set by the episode time (fixed-length episodes, rewards 1 plus noise), observations noise: held-out halves
    # score the time's features alone best on some folds, and a fit on them alone gives lambda-returns no view of the
    # state there. With choose_size=False the fit takes its features whole: other observations give other baselines
    n_steps, n_envs, length = 64, 8, 16
    rng = np.random.default_rng(0)
    rewards = (1.0 + 0.1 * rng.normal(size=(n_steps, n_envs))).astype(np.float32)
    starts = np.zeros((n_steps, n_envs), dtype=np.float32)
    for env in range(n_envs):
        starts[(np.arange(n_steps) + 2 * env) % length == 0, env] = 1.0
    starts[0] = 1.0
    baselines, sizes = [], []
    for obs_seed in (1, 2):
        observations = np.random.default_rng(obs_seed).normal(size=(n_steps + 1, n_envs, 3)).astype(np.float32)
        buffer = GroupRolloutBuffer(n_steps, spaces.Box(-5, 5, (3,)), spaces.Discrete(2), gamma=1.0, gae_lambda=0.95,
                                    n_envs=n_envs, baseline="linear", truncated_returns="bootstrap",
                                    baseline_kwargs={"memory": 0, "fourier": 0, "choose_size": choose_size})  # fmt: skip
        for step in range(n_steps):
            buffer.add(observations[step], np.zeros((n_envs, 1)), rewards[step], starts[step], th.zeros(n_envs),
                       th.zeros(n_envs))  # fmt: skip
        buffer.compute_returns_and_advantage(th.zeros(n_envs), np.zeros(n_envs, dtype=bool), last_obs=observations[-1])
        baselines.append(buffer.values.copy())
        sizes.append(buffer.group_stats["fit_size"])
    moved = np.abs(baselines[0] - baselines[1]) > 1e-6
    # the diagnostic says how many features the folds' fits used: the time's cubic, the observation and its square
    n_features = BASE_FEATURES + 2 * 3
    if choose_size:  # the choice of the time's features alone on some folds: their baselines read no observation
        assert moved.mean() < 0.9, f"{moved.mean():.0%} of the baselines read the observation"
        assert all(BASE_FEATURES <= size < n_features for size in sizes), sizes
    else:
        assert moved.mean() > 0.9, f"{moved.mean():.0%} of the baselines read the observation"
        assert sizes == [n_features] * 2


def test_computing_a_rollouts_advantages_twice_gives_the_same_and_remembers_it_once():
    buffer = make_buffer(GroupRolloutBuffer, 0.95, baseline="auto", truncated_returns="bootstrap")
    stream = rollouts(seed=3, n_rollouts=3)
    for rollout in list(stream)[:2]:
        run(buffer, rollout)
    rollout = next(rollouts(seed=4, n_rollouts=1))
    run(buffer, rollout)
    first = (buffer.advantages.copy(), buffer.returns.copy(), buffer.episode_times.copy(), len(buffer.baseline_memory))
    buffer.compute_returns_and_advantage(th.zeros(N_ENVS), rollout[3], last_obs=rollout[4])
    second = (buffer.advantages.copy(), buffer.returns.copy(), buffer.episode_times.copy(), len(buffer.baseline_memory))
    for before, after in zip(first[:3], second[:3], strict=True):
        np.testing.assert_array_equal(before, after)
    assert first[3] == second[3] == 3


def test_the_random_features_are_drawn_from_the_models_seed():
    def feature_seed(seed):
        model = GPG("MlpPolicy", "Pendulum-v1", n_steps=64, batch_size=64, seed=seed)
        return model.rollout_buffer.group_options.baseline_kwargs["fourier_seed"]

    assert feature_seed(1) == feature_seed(1)
    assert feature_seed(1) != feature_seed(2)


def test_the_constructors_default_and_gpg_ymls_default_entry_are_one_estimator_at_lambda_one():
    # the entry names the lambda it was tuned with, 1; the constructor chooses it ("auto")
    from importlib import resources

    entry = yaml.safe_load(resources.files("sb3_gpg").joinpath("hyperparams/gpg.yml").read_text())["default"]
    options = {name: entry[name] for name in ("baseline", "baseline_kwargs", "gae_lambda") if name in entry}
    assert options["gae_lambda"] == 1.0
    constructor = GPG("MlpPolicy", "Pendulum-v1", n_steps=64, batch_size=64, seed=0, gae_lambda=1.0)
    from_entry = GPG("MlpPolicy", "Pendulum-v1", n_steps=64, batch_size=64, seed=0, **options)
    assert from_entry.rollout_buffer.group_options == constructor.rollout_buffer.group_options
    assert GPG("MlpPolicy", "Pendulum-v1", n_steps=64, batch_size=64, seed=0).gae_lambda == "auto"


@pytest.mark.parametrize(
    "gae_lambda, given, target", [(0.8, None, "lambda_returns"), (1.0, None, "returns"), (0.8, "returns", "returns")]
)
def test_the_linear_baseline_given_no_target_fits_its_own_lambda_returns_where_gae_lambda_is_below_one(
    gae_lambda, given, target
):
    # as PPO's critic is fitted on GAE's returns over itself; at lambda 1 those are the Monte-Carlo returns
    options = dict(binning="time", baseline="linear", truncated_returns="bootstrap")
    baseline_kwargs = dict(memory=2, fourier=8, fourier_seed=3)
    given_kwargs = baseline_kwargs if given is None else dict(baseline_kwargs, target=given)
    buffer = make_buffer(GroupRolloutBuffer, gae_lambda, **options, baseline_kwargs=given_kwargs)
    reference = ReferenceGPG(
        N_ENVS, GAMMA, gae_lambda=gae_lambda, **options, baseline_kwargs=dict(baseline_kwargs, target=target)
    )
    for rollout in rollouts(seed=7, n_rollouts=3):
        fill(buffer, *rollout)
        _, baselines, advantages, _ = reference.advantages(*rollout)
        np.testing.assert_allclose(buffer.values, baselines, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(buffer.advantages, advantages, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("gae_lambda", [0.95, 1.0])
def test_the_constructors_target_is_the_lambda_returns_where_gae_lambda_is_below_one_and_the_returns_at_one(
    gae_lambda, device
):
    def values(**options):
        env = make_vec_env("Pendulum-v1", n_envs=4, seed=0)
        model = GPG("MlpPolicy", env, n_steps=64, batch_size=64, gae_lambda=gae_lambda, seed=0, device=device, **options)
        model.learn(3 * 4 * 64)  # the third rollout's fit reads the memory of two
        return model.rollout_buffer.values.copy()

    targets = ("returns", "lambda_returns") if gae_lambda < 1 else ("returns",)
    given = {target: values(baseline_kwargs={"target": target}) for target in targets}
    np.testing.assert_array_equal(values(), given[targets[-1]])
    if gae_lambda < 1:
        assert not np.allclose(given["returns"], given["lambda_returns"], atol=1e-3), "the two targets fit apart"


@pytest.mark.parametrize(
    "options", [{"baseline": "linear"}, {"baseline_kwargs": {"ridge": 1e-2}}, {"baseline": "linear", "baseline_kwargs": {}}]
)
def test_the_linear_baseline_named_or_given_some_arguments_keeps_the_defaults_memory_and_features(options):
    model = GPG("MlpPolicy", "Pendulum-v1", n_steps=64, batch_size=64, seed=0, **options)
    default = GPG("MlpPolicy", "Pendulum-v1", n_steps=64, batch_size=64, seed=0)
    kwargs, default_kwargs = (
        model.rollout_buffer.group_options.baseline_kwargs,
        default.rollout_buffer.group_options.baseline_kwargs,
    )
    assert kwargs["memory"] == default_kwargs["memory"] > 0
    assert kwargs["fourier"] == default_kwargs["fourier"] > 0


def test_a_memory_starts_where_every_rollout_is_one_cut_trajectory():
    # One env, episodes longer than the rollouts: the first rollout has nothing to fit on and keeps the bins'
    # baselines, but is remembered, so that the next ones are fitted on the memory
    buffer = GroupRolloutBuffer(16, spaces.Box(-5, 5, (3,)), spaces.Discrete(2), gamma=0.99, n_envs=1, baseline="auto",
                                truncated_returns="bootstrap")  # fmt: skip
    rng = np.random.default_rng(0)
    fallbacks = []
    for number in range(3):
        buffer.reset()
        for step in range(16):
            start = np.array([number == 0 and step == 0], dtype=np.float32)
            buffer.add(rng.normal(size=(1, 3)).astype(np.float32), np.zeros((1, 1)), rng.normal(size=1).astype(np.float32),
                       start, th.zeros(1), th.zeros(1))  # fmt: skip
        buffer.compute_returns_and_advantage(th.zeros(1), np.zeros(1, dtype=bool), last_obs=rng.normal(size=(1, 3)))
        fallbacks.append(buffer.group_stats["fitted_baseline_fallback"])
    assert fallbacks == [1.0, 0.0, 0.0]
    assert len(buffer.baseline_memory) == 3


def test_a_remembered_memory_and_a_rollout_whose_returns_are_all_masked():
    # Pendulum's 200-step episodes and 64-step rollouts: the fourth rollout holds an episode's end (the memory starts),
    # the fifth none, so that under "mask" no sample is in its group, with a memory to fit on all the same
    model = GPG("MlpPolicy", "Pendulum-v1", n_steps=64, batch_size=64, n_epochs=1, truncated_returns="mask", seed=0,
                device="cpu")  # fmt: skip
    with pytest.warns(UserWarning, match="No sample of this rollout entered the loss"):
        model.learn(5 * 64)
    assert len(model.rollout_buffer.baseline_memory) >= 1  # the fifth rollout had a memory to fit on


def test_completed_returns_stay_within_the_range_of_the_returns_fitted_on():
    # Rewards of 1 a step and gamma 0.99 bound every return by 100, whatever the episode time; two envs run 8-step
    # episodes, two run on at times 300 and 3,000, where the cubic in the time, fitted on short episodes only, would
    # extrapolate far off: the completions and the baselines stay within the returns fitted on, rollout after rollout
    rng = np.random.default_rng(1)
    buffer = GroupRolloutBuffer(64, spaces.Box(-5, 5, (3,)), spaces.Discrete(2), gamma=0.99, n_envs=4, baseline="auto",
                                truncated_returns="bootstrap")  # fmt: skip
    buffer._next_episode_times[:] = [0, 0, 300, 3000]
    for _ in range(3):
        buffer.reset()
        for step in range(64):
            starts = np.array([step % 8 == 0, step % 8 == 0, False, False], dtype=np.float32)
            rewards = np.ones(4, dtype=np.float32) + 0.3 * (step % 8) / 8 * np.array([1, 1, 1, 0])
            buffer.add(rng.normal(size=(4, 3)).astype(np.float32), np.zeros((4, 1)), rewards, starts, th.zeros(4),
                       th.zeros(4))  # fmt: skip
        buffer.compute_returns_and_advantage(
            th.zeros(4), np.array([True, True, False, False]), last_obs=rng.normal(size=(4, 3))
        )
        assert buffer.returns.max() <= 1.3 / (1 - 0.99) and buffer.values.max() <= 1.3 / (1 - 0.99)
        assert buffer.returns.min() >= 0 and buffer.values.min() >= 0


def baselines_after_a_memory(memory_weight, recency):
    """
    :return: the current rollout's baselines, fitted with one remembered rollout: the remembered rollout's rewards are
        the first observation, the current rollout's its opposite
    """
    kwargs = dict(memory=1, recency=recency, memory_weight=memory_weight, fourier=8, fourier_seed=3)
    buffer = make_buffer(GroupRolloutBuffer, 1.0, baseline="linear", truncated_returns="keep", baseline_kwargs=kwargs)
    for index, (observations, _, starts, last_dones, last_obs) in enumerate(rollouts(11)):
        rewards = (1.0 if index == 0 else -1.0) * observations[..., 0]
        fill(buffer, observations, rewards, starts, last_dones, last_obs)
    return buffer.values.copy()


def test_the_remembered_rollouts_weigh_at_most_memory_weight_times_the_current_rollout():
    # one remembered rollout whose returns go the other way in the first observation: it pulls the fit the more it weighs
    nearly_alone = baselines_after_a_memory(1.0, 1e-9)
    pulls = {w: np.abs(baselines_after_a_memory(w, 1.0) - nearly_alone).mean() for w in (0.1, 0.5, 1.0, None)}
    assert pulls[0.1] < pulls[0.5] < pulls[1.0] < pulls[None], pulls
    # where the cap binds, the remembered rollout's own weight (its recency) no longer counts: together they weigh the cap
    np.testing.assert_allclose(baselines_after_a_memory(0.1, 0.5), baselines_after_a_memory(0.1, 1.0), rtol=1e-9)
    assert np.abs(baselines_after_a_memory(None, 0.5) - baselines_after_a_memory(None, 1.0)).max() > 1e-3
