"""
Each of the estimator's options through each of the four algorithms, on Box and on Dict observations: the advantages
of a real rollout (episodes of every length, cut by the rollout's end) equal the loop-by-loop reference's on the same
samples. ``test_estimator`` and ``test_state_aware`` check the options on random rollouts; these check that each
algorithm hands the estimator the right samples, times, last observations and options. (The "state" binning needs
discrete observations: ``test_estimator`` checks it.)
"""

from typing import Any

import numpy as np
import pytest

from tests.helpers import QUICK_LAMBDA_FIT, Algorithm, collect_rollout, with_seed_of
from tests.reference import ReferenceGPG

GAMMA = 0.95


def flat(observations: Any) -> np.ndarray:
    """Dict observations as the Box they were split from (``SplitObservation``)."""
    return np.concatenate([observations["a"], observations["b"]], axis=-1) if isinstance(observations, dict) else observations


def first_and_last_coordinate(obs, t):
    """A custom binning: the cue's first coordinate and where the agent stands."""
    obs = flat(obs)
    return (obs[..., 0] > 0.5).astype(np.int64) * 2 + (obs[..., -1] > 0.5).astype(np.int64)


OPTIONS: list[dict[str, Any]] = [
    dict(binning="time", baseline="bins"),  # the paper's estimator
    dict(binning="spatial_time", bin_size=0.5, leave_one_out=True, min_bin_count=2, advantage_scale="bin_std"),
    dict(binning="rollout_step", truncated_returns="mask"),
    dict(binning="spatial", bin_size=[0.5, 0.5, 1.0, 1.0, 1.0], truncated_returns="bootstrap"),
    dict(binning="universal", leave_one_out=True, gae_lambda=0.9),
    dict(binning=first_and_last_coordinate, truncated_returns="bootstrap", advantage_scale="bin_std"),
    # on its own lambda-returns, its default target at this lambda
    dict(
        binning="time",
        baseline="linear",
        baseline_kwargs=dict(QUICK_LAMBDA_FIT),
        gae_lambda=0.9,
        truncated_returns="bootstrap",
    ),
    # The maze's samples lie on a grid, where which of equally far neighbours count is arbitrary: k covers every sample
    # here (test_state_aware checks the choice of neighbours on continuous observations)
    dict(binning="time", baseline="knn", baseline_kwargs=dict(n_neighbors=1024), gae_lambda=0.95, truncated_returns="mask"),
    dict(binning="universal", baseline="linear", truncated_returns="keep"),
    # the fit on each rollout alone, on all its features
    dict(
        binning="time",
        baseline="linear",
        baseline_kwargs=dict(memory=0, fourier=0, choose_size=False),
        gae_lambda=0.95,
        truncated_returns="bootstrap",
    ),
]


def option_id(options: dict[str, Any]) -> str:
    return "-".join(str(getattr(value, "__name__", value)) for value in options.values()).replace(" ", "")


@pytest.mark.parametrize("dict_observations", [False, True], ids=["Box", "Dict"])
@pytest.mark.parametrize("options", OPTIONS, ids=option_id)
def test_a_rollout_gets_the_references_advantages(algorithm: Algorithm, options, dict_observations):
    env = algorithm.env(dict_observations=dict_observations)
    model = algorithm.cls(algorithm.policy(dict_observations), env, seed=3, gamma=GAMMA, **options, **algorithm.small)
    # a baseline left to the algorithm ("auto") is the bins under a binning other than the time's
    kwargs = with_seed_of(model.rollout_buffer, options.get("baseline_kwargs"))
    assert_references_advantages(model, ReferenceGPG(env.num_envs, GAMMA, **{**options, "baseline_kwargs": kwargs}))


@pytest.mark.parametrize("dict_observations", [False, True], ids=["Box", "Dict"])
def test_the_algorithms_defaults_are_the_linear_baseline_with_the_cut_returns_completed(algorithm, dict_observations):
    # what a one-word swap from PPO gets on observations with Box values (a Dict's Box parts)
    env = algorithm.env(dict_observations=dict_observations)
    model = algorithm.cls(algorithm.policy(dict_observations), env, seed=3, gamma=GAMMA, **algorithm.small)
    reference = ReferenceGPG(env.num_envs, GAMMA, "time", baseline="linear", truncated_returns="bootstrap",
                             baseline_kwargs=with_seed_of(model.rollout_buffer, None))  # fmt: skip
    assert_references_advantages(model, reference)


def assert_references_advantages(model, reference: ReferenceGPG) -> None:
    """The advantages, returns and baselines of one rollout of ``model`` are the reference's."""
    buffer = collect_rollout(model)
    last_dones = model._last_episode_starts.astype(bool)
    # Episodes end inside the rollout, and some are cut by its end
    assert buffer.episode_starts[1:].any() and not last_dones.all()

    returns, baselines, advantages, in_group = reference.advantages(
        flat(buffer.observations), buffer.rewards, buffer.episode_starts, last_dones, flat(model._last_obs)
    )
    np.testing.assert_allclose(buffer.returns, returns, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(buffer.values[in_group], baselines[in_group], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(buffer.advantages, np.where(in_group, advantages, 0.0), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(buffer.in_loss, None if in_group.all() else in_group.T.reshape(-1))
    assert np.abs(buffer.advantages).max() > 0  # the rollout gives a signal to check


# a few random Fourier features keep the loop-by-loop reference quick; the default's count is checked on one rollout above
# (memory_weight: the remembered rollouts, half a rollout each fold fits on, weigh 0.75 of one: capped at the default's 1
# and at 0.25, not at all under None)
@pytest.mark.parametrize(
    "truncated_returns, fourier, memory_weight",
    [
        ("bootstrap", dict(fourier=16), 1.0),
        ("mask", dict(fourier=16, fourier_scale=0.25, fourier_seed=7), 1.0),
        ("bootstrap", dict(fourier=16), None),
        ("bootstrap", dict(fourier=16), 0.25),
    ],
)
def test_the_linear_baselines_memory_gets_the_references_baselines_rollout_after_rollout(
    algorithm: Algorithm, truncated_returns, fourier, memory_weight
):
    options = dict(
        baseline="linear",
        baseline_kwargs=dict(memory=2, recency=0.5, memory_weight=memory_weight, **fourier),
        truncated_returns=truncated_returns,
    )
    model = algorithm.cls(
        algorithm.policy(), algorithm.env(), seed=3, gamma=GAMMA, gae_lambda=0.9, **options, **algorithm.small
    )
    buffer = collect_rollout(model)
    options["baseline_kwargs"] = with_seed_of(buffer, options["baseline_kwargs"])
    reference = ReferenceGPG(model.n_envs, GAMMA, "time", gae_lambda=0.9, **options)
    forgetless = with_seed_of(buffer, dict(fourier, memory=0))
    forgetful = ReferenceGPG(model.n_envs, GAMMA, "time", gae_lambda=0.9, **{**options, "baseline_kwargs": forgetless})
    for rollout in range(4):  # the fourth remembers the second and third
        if rollout:
            model.collect_rollouts(model.env, model._setup_learn(0, None, reset_num_timesteps=False)[1], buffer, model.n_steps)
        last_dones = model._last_episode_starts.astype(bool)
        args = (buffer.observations, buffer.rewards, buffer.episode_starts, last_dones, model._last_obs)
        returns, baselines, advantages, in_group = reference.advantages(*args)
        np.testing.assert_allclose(buffer.returns, returns, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(buffer.values[in_group], baselines[in_group], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(buffer.advantages, np.where(in_group, advantages, 0.0), rtol=1e-4, atol=1e-4)
        assert len(buffer.baseline_memory) == min(rollout + 1, 2)
        # without the memory, the baselines differ from the second rollout on
        _, without_memory, _, _ = forgetful.advantages(*args)
        assert (rollout > 0) == bool(np.abs(without_memory - baselines)[in_group].max() > 1e-3)


def test_the_algorithms_default_baseline_is_the_bins_where_the_linear_one_has_no_features_or_a_binning_is_chosen(
    tmp_path,
):
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.envs import FakeImageEnv

    from sb3_gpg import GPG

    def resolved(env, policy="MlpPolicy", **options):
        buffer = GPG(policy, env, n_steps=16, batch_size=16, device="cpu", **options).rollout_buffer
        return buffer.baseline, buffer.truncated_returns

    assert resolved("Pendulum-v1") == ("linear", "bootstrap")
    assert resolved("Pendulum-v1", truncated_returns="mask") == ("linear", "mask")
    assert resolved("Pendulum-v1", binning="universal") == ("bins", "keep")
    assert resolved("FrozenLake-v1") == ("bins", "keep")  # Discrete observations
    image_env = FakeImageEnv(screen_height=36, screen_width=36, n_channels=1)
    assert resolved(image_env, "CnnPolicy", policy_kwargs=dict(features_extractor_kwargs=dict(features_dim=8))) == (
        "bins",
        "keep",
    )
    assert resolved("Pendulum-v1", baseline="bins") == ("bins", "keep")  # the paper's estimator, one argument away
    # a saved model keeps "auto" and decides again on the env it is loaded with
    model = GPG("MlpPolicy", "Pendulum-v1", n_steps=16, batch_size=16, device="cpu")
    model.save(tmp_path / "model")
    loaded = GPG.load(tmp_path / "model", env=make_vec_env("Pendulum-v1"), device="cpu")
    assert (loaded.baseline, loaded.rollout_buffer.baseline, loaded.rollout_buffer.truncated_returns) == (
        "auto",
        "linear",
        "bootstrap",
    )
    # and no baseline_kwargs, so that the load resolves the linear baseline's defaults again, unless it is given others
    assert loaded.baseline_kwargs is None and loaded.rollout_buffer.baseline_kwargs["memory"] == 8
    one_rollout = dict(memory=0, fourier=0)
    reloaded = GPG.load(tmp_path / "model", env=make_vec_env("Pendulum-v1"), device="cpu", baseline_kwargs=one_rollout)
    assert reloaded.rollout_buffer.baseline_kwargs["memory"] == 0
    with pytest.raises(ValueError, match="baseline='auto' uses the bins here"):
        resolved("FrozenLake-v1", baseline_kwargs=dict(memory=8))


@pytest.mark.parametrize(
    "algorithm, policy, env_id",
    [
        ("GPG", "MlpPolicy", "Pendulum-v1"),
        ("RecurrentGPG", "MlpLstmPolicy", "Pendulum-v1"),
        ("MaskableGPG", "MlpPolicy", "CartPole-v1"),
        ("MaskableRecurrentGPG", "MlpLstmPolicy", "CartPole-v1"),
    ],
)
def test_the_algorithms_linear_baseline_gets_the_same_defaults_under_auto_and_linear_and_given_kwargs_merge_over_them(
    algorithm, policy, env_id
):
    import sb3_gpg
    from sb3_gpg import GPG
    from sb3_gpg.estimator.fitted_baselines import BASELINE_KWARGS

    def kwargs(**options):
        # lambda 1, the variants' default, for all four: the target "auto" is then made concrete
        model = getattr(sb3_gpg, algorithm)(policy, env_id, n_steps=16, batch_size=16, gae_lambda=1.0, device="cpu", **options)
        resolved = dict(model.rollout_buffer.baseline_kwargs)
        # the Fourier features' seed, where not given, drawn from the model's
        assert isinstance(resolved["fourier_seed"], int)
        return resolved

    def without_seed(kwargs):
        return {name: value for name, value in kwargs.items() if name != "fourier_seed"}

    # the target "auto" made concrete for GPG's gae_lambda of 1
    defaults = {**without_seed(BASELINE_KWARGS["linear"]), "target": "returns"}
    # the defaults remember the last rollouts and add random Fourier features
    assert (defaults["memory"], defaults["fourier"], defaults["recency"]) == (8, 256, 0.8)
    assert without_seed(kwargs()) == defaults
    # given baseline_kwargs merge over the same defaults, {} included, under baseline="linear" as under "auto"
    assert without_seed(kwargs(baseline_kwargs={})) == defaults == without_seed(kwargs(baseline="linear"))
    assert without_seed(kwargs(baseline_kwargs=dict(ridge=1e-2))) == {**defaults, "ridge": 1e-2}
    one_rollout = dict(memory=0, fourier=0)  # the fit on each rollout alone, on rllab's features
    assert without_seed(kwargs(baseline="linear", baseline_kwargs=one_rollout)) == {**defaults, **one_rollout}
    assert kwargs(baseline_kwargs=dict(fourier_seed=5))["fourier_seed"] == 5
    # where "auto" comes out as the bins there is no fitted baseline to preset
    assert GPG("MlpPolicy", "FrozenLake-v1", n_steps=16, batch_size=16, device="cpu").rollout_buffer.baseline_kwargs == {}


@pytest.mark.parametrize("file", ["gpg.yml", "gpg_lstm.yml", "gpg_mask.yml", "gpg_mask_lstm.yml"])
def test_shipped_entries_of_the_linear_baseline_get_its_defaults_under_what_they_name(file):
    # One default for "auto", "linear" and the files: an entry's baseline_kwargs merge over the linear baseline's
    # defaults, and the files' default entry gets the constructor's default estimator
    from pathlib import Path

    import gymnasium as gym
    import yaml

    from sb3_gpg.common.observation_space import has_features
    from sb3_gpg.estimator.fitted_baselines import BASELINE_KWARGS
    from sb3_gpg.estimator.options import GroupOptions

    entries = yaml.safe_load((Path(__file__).parents[1] / "sb3_gpg" / "hyperparams" / file).read_text())
    constructors = GroupOptions.from_kwargs(file, {}).resolved(True).checked()
    for env_id, entry in entries.items():
        given = {k: entry[k] for k in ("baseline", "binning", "baseline_kwargs") if k in entry}
        options = GroupOptions.from_kwargs(file, given)
        if options.baseline not in ("auto", "linear"):
            continue
        if env_id == "default" or options.baseline == "linear":
            features = True  # the default entry: an env whose observations give features
        else:
            features = has_features(gym.make(env_id, **entry.get("env_kwargs", {})).observation_space)
        resolved = options.resolved(features).checked()
        if resolved.baseline != "linear":
            continue
        expected = {**BASELINE_KWARGS["linear"], **(entry.get("baseline_kwargs") or {})}
        assert resolved.baseline_kwargs == expected, f"{file}'s {env_id}"
        if env_id == "default":
            assert resolved == constructors, f"{file}'s default is not the constructor's estimator"
