"""
GPG's linear baseline fitted on another algorithm's rollouts, in several variants side by side: the swap's diagnosis
asks how much of a walking policy's returns the default baseline explains where PPO's critic explains more, and which
of its parts (the lambda-returns target, the memory, the Fourier features, the projection of a large observation)
holds it back.

``BaselineVariants`` is an RL Zoo callback (the ``callback`` hyperparameter) that changes nothing in training: after
each rollout it copies the rollout into one GPG rollout buffer per variant (``VARIANTS``), each keeping its own memory
and ``gae_lambda="auto"``'s window across rollouts as GPG's does, and logs each buffer's held-out explained variance
(``train/baseline_explained_variance``'s footing) as ``variants/<name>``. GAE's lambda is the swap's: ``"auto"``,
or where the PPO entry sets one, the value that the environment variable ``BASELINE_VARIANTS_LAMBDA`` gives (the
algorithm's own reads 0.95 whether the entry set it or not). ``variants/in_sample`` is the default
features' ridge fit scored on the samples it was fitted on, with no memory: what the features can express of one
rollout's returns at all. Beside ``critic_variants.ReturnsExplained`` the rows compare with PPO's critic on the same
rollouts and returns.

``SavedRollouts`` keeps the rollouts themselves (observations, rewards, episode starts, the dones and observation
after each) in the windows of steps that the environment variable ``SAVED_ROLLOUTS_STEPS`` names (``"a-b,c-d"``), one
``.npz`` per rollout in the folder that ``SAVED_ROLLOUTS`` names (RL Zoo builds its callbacks without arguments), so
that ``variants_on_saved`` scores any variant on them later without training again.

The rewards are those of the algorithm's buffer: PPO's adds its critic's value of the state where a time limit cut an
episode to the episode's last reward, which GPG's does not. The returns are GPG's but for the episodes that a time
limit cut, which both the variants and the critic are scored on.

The buffers' features take an explicit ``fourier_seed``: a drawn one would come from NumPy's global generator, which
the algorithm's minibatches read.
"""

import os
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from gymnasium import spaces

from sb3_gpg.common.buffers import GroupRolloutBuffer
from sb3_gpg.estimator import fitted_baselines
from sb3_gpg.estimator.auto_lambda import AUTO_LAMBDA
from sb3_gpg.estimator.options import ALGORITHM_DEFAULTS, GroupOptions
from sb3_gpg_bench.critic_variants import RolloutEndCallback

# The seed of every variant's random features
FEATURE_SEED = 0
# name: the linear baseline's arguments over the constructor's (all under gae_lambda="auto"), and ``max_obs_features``:
# the size of the random projection of a large observation (0: none, every dimension a feature)
VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "returns": {"target": "returns"},
    "no_memory": {"memory": 0},
    "no_fourier": {"fourier": 0},
    "unprojected": {"max_obs_features": 0},
}


class BaselineVariants(RolloutEndCallback):
    """Log how much of each rollout's returns GPG's linear baseline explains, held out, in each of ``VARIANTS``."""

    def _init_callback(self) -> None:
        model = self.on_policy_model
        assert isinstance(model.observation_space, spaces.Box), "variants of the linear baseline on Box observations"
        gae_lambda = os.environ.get("BASELINE_VARIANTS_LAMBDA", AUTO_LAMBDA)
        self.variants = variant_buffers(
            VARIANTS,
            model.n_steps,
            model.n_envs,
            model.observation_space,
            model.gamma,
            gae_lambda if gae_lambda == AUTO_LAMBDA else float(gae_lambda),
        )

    def _on_rollout_end(self) -> None:
        source = self.on_policy_model.rollout_buffer
        rollout = (source.observations, source.rewards, source.episode_starts, self.locals["dones"], self.locals["new_obs"])
        for name, explained in variants_explained(self.variants, *rollout).items():
            self.logger.record(f"variants/{name}", explained)
        self.logger.record("variants/lambda", self.variants["default"].buffer.gae_lambda)


class SavedRollouts(RolloutEndCallback):
    """Save the rollouts of the windows of steps ``SAVED_ROLLOUTS_STEPS`` in the folder ``SAVED_ROLLOUTS``."""

    def _init_callback(self) -> None:
        self.folder = Path(os.environ["SAVED_ROLLOUTS"])
        self.folder.mkdir(parents=True, exist_ok=True)
        windows = os.environ["SAVED_ROLLOUTS_STEPS"].split(",")
        self.windows = [tuple(int(step) for step in window.split("-")) for window in windows]

    def _on_rollout_end(self) -> None:
        if not any(low < self.num_timesteps <= high for low, high in self.windows):
            return
        source = self.on_policy_model.rollout_buffer
        np.savez_compressed(
            self.folder / f"rollout_{self.num_timesteps:09d}.npz",
            observations=source.observations,
            rewards=source.rewards,
            episode_starts=source.episode_starts,
            dones=np.asarray(self.locals["dones"]),
            last_obs=np.asarray(self.locals["new_obs"]),
            gamma=self.on_policy_model.gamma,
        )


class Variant(NamedTuple):
    """A variant's GPG rollout buffer, and the size of its projection of a large observation (None: the default's)"""

    buffer: GroupRolloutBuffer
    max_obs_features: int | None = None


def variant_buffers(
    variants: dict[str, dict[str, Any]],
    n_steps: int,
    n_envs: int,
    observation_space: spaces.Box,
    gamma: float,
    gae_lambda: float | str = AUTO_LAMBDA,
) -> dict[str, Variant]:
    """:return: one GPG rollout buffer per variant (``VARIANTS``' form), with GAE's ``gae_lambda``"""
    built = {}
    for name, kwargs in variants.items():
        baseline_kwargs = {key: value for key, value in kwargs.items() if key != "max_obs_features"}
        buffer = GroupRolloutBuffer(
            n_steps,
            observation_space,
            spaces.Box(-1.0, 1.0, (1,)),  # no action is read
            device="cpu",
            gae_lambda=gae_lambda,
            gamma=gamma,
            n_envs=n_envs,
            group_options=GroupOptions(**ALGORITHM_DEFAULTS, baseline_kwargs=baseline_kwargs | {"fourier_seed": FEATURE_SEED}),
        )
        built[name] = Variant(buffer, kwargs.get("max_obs_features"))
    return built


def variants_explained(
    variants: dict[str, Variant],
    observations: np.ndarray,
    rewards: np.ndarray,
    episode_starts: np.ndarray,
    dones: np.ndarray,
    last_obs: np.ndarray,
) -> dict[str, float]:
    """
    :param variants: ``variant_buffers``, whose memories and windows carry on from the previous rollout
    :return: each variant's held-out explained variance of this rollout's returns, and ``in_sample`` (the default's
        features fitted and scored on the same samples) where there is a ``default`` variant
    """
    explained = {}
    for name, (buffer, max_obs_features) in variants.items():
        buffer.reset()
        buffer.observations[:] = observations
        buffer.rewards[:] = rewards
        buffer.episode_starts[:] = episode_starts
        buffer.pos, buffer.full = buffer.buffer_size, True
        _estimate(buffer, max_obs_features, dones, last_obs)
        explained[name] = buffer.group_stats["baseline_explained_variance"]
    if "default" in variants:
        explained["in_sample"] = _in_sample(variants["default"].buffer)
    return explained


def variants_on_saved(
    folder: Path, variants: dict[str, dict[str, Any]], gae_lambda: float | str = AUTO_LAMBDA
) -> dict[str, list[tuple[int, float]]]:
    """
    :param folder: ``SavedRollouts``' folder
    :param gae_lambda: GAE's lambda of the variants (the swap's)
    :return: per variant (and ``in_sample``), ``(steps, held-out explained variance)`` of every saved rollout but the
        first of each run of consecutive rollouts (a window). A window starts inside its episodes: its first rollout
        gives the episode times (an episode that began before it is read at its start's time until it ends) and is
        then forgotten (no memory holds it, nor ``"auto"``'s window), so the next rollout's times are all right where
        no episode outlasts a rollout
    """
    files = sorted(folder.glob("rollout_*.npz"))
    series: dict[str, list[tuple[int, float]]] = {}
    built: dict[str, Variant] = {}
    previous = -1
    for file in files:
        rollout = np.load(file)
        steps = int(file.stem.split("_")[1])
        n_steps, n_envs = rollout["rewards"].shape
        arrays = [rollout[key] for key in ("observations", "rewards", "episode_starts", "dones", "last_obs")]
        starts = steps != previous + n_steps * n_envs
        previous = steps
        if starts:
            box = spaces.Box(-np.inf, np.inf, rollout["observations"].shape[2:], np.float32)
            built = variant_buffers(variants, n_steps, n_envs, box, float(rollout["gamma"]), gae_lambda)
            variants_explained(built, *arrays)
            for variant in built.values():
                variant.buffer.reset_estimator_state()
            continue
        for name, explained in variants_explained(built, *arrays).items():
            series.setdefault(name, []).append((steps, explained))
    return series


def _estimate(buffer: GroupRolloutBuffer, max_obs_features: int | None, dones: np.ndarray, last_obs: np.ndarray) -> None:
    """The buffer's estimate, with the projection's size set for this variant alone."""
    kept = fitted_baselines.MAX_OBS_FEATURES
    if max_obs_features is not None:
        # (the maps are cached by the observation's size, not by the projection's)
        fitted_baselines.random_maps.cache_clear()
        fitted_baselines.MAX_OBS_FEATURES = max_obs_features or int(np.prod(buffer.obs_shape))
    try:
        buffer.compute_returns_and_advantage(None, dones, last_obs)  # type: ignore[arg-type]
    finally:
        fitted_baselines.MAX_OBS_FEATURES = kept
        if max_obs_features is not None:
            fitted_baselines.random_maps.cache_clear()


def _in_sample(buffer: GroupRolloutBuffer) -> float:
    """
    :return: the explained variance of the default features' ridge fit (the estimator's penalty, on standardised
        columns) on the rollout's returns as the default buffer completed them, scored on the same samples
    """
    kwargs = buffer.group_options.baseline_kwargs or {}
    n_steps, n_envs = buffer.rewards.shape
    flat_obs = buffer.observations.reshape(n_steps * n_envs, -1)
    features = fitted_baselines.linear_features(
        flat_obs, buffer.episode_times.reshape(-1), kwargs["fourier"], kwargs["fourier_scale"], kwargs["fourier_seed"]
    )
    returns = buffer.returns.reshape(-1).astype(np.float64)
    centred = features[:, 1:] - features[:, 1:].mean(axis=0)
    # (a column that does not vary, a contact force never touched, is held at 0)
    penalty = np.diag(kwargs["ridge"] * len(returns) * centred.var(axis=0) + 1e-9)
    coefficients = np.linalg.solve(centred.T @ centred + penalty, centred.T @ (returns - returns.mean()))
    residuals = returns - returns.mean() - centred @ coefficients
    variance = returns.var()
    return float("nan") if variance == 0 else float(1 - residuals.var() / variance)
