"""
GPG's linear baseline fitted on another algorithm's rollouts, in several variants side by side: the swap's diagnosis
asks how much of a walking policy's returns the default baseline explains where PPO's critic explains more, and which
of its parts (the lambda-returns target, the memory, the Fourier features, the projection of a large observation)
holds it back.

``BaselineVariants`` is an RL Zoo callback (the ``callback`` hyperparameter) that changes nothing in training: after
each rollout it copies the rollout into one GPG rollout buffer per variant (``VARIANTS``), each keeping its own memory
and ``gae_lambda="auto"``'s window across rollouts as GPG's does, and logs each buffer's held-out explained variance
(``train/baseline_explained_variance``'s footing) as ``variants/<name>``. ``variants/in_sample`` is the default
features' ridge fit scored on the samples it was fitted on, with no memory: what the features can express of one
rollout's returns at all. Beside ``critic_variants.ReturnsExplained`` the rows compare with PPO's critic on the same
rollouts and returns.

The buffers' features take an explicit ``fourier_seed``: a drawn one would come from NumPy's global generator, which
the algorithm's minibatches read.
"""

from typing import Any

import numpy as np
from gymnasium import spaces

from sb3_gpg.common.buffers import GroupRolloutBuffer
from sb3_gpg.estimator import fitted_baselines
from sb3_gpg.estimator.options import ALGORITHM_DEFAULTS, GroupOptions
from sb3_gpg_bench.critic_variants import RolloutEndCallback

# The seed of every variant's random features
FEATURE_SEED = 0
# name: the linear baseline's arguments over the constructor's (all under gae_lambda="auto")
VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "returns": {"target": "returns"},
    "no_memory": {"memory": 0},
    "no_fourier": {"fourier": 0},
    # every observation dimension as a feature, without the random projection of a large observation
    "unprojected": {},
}


class BaselineVariants(RolloutEndCallback):
    """Log how much of each rollout's returns GPG's linear baseline explains, held out, in each of ``VARIANTS``."""

    def _init_callback(self) -> None:
        model = self.on_policy_model
        assert isinstance(model.observation_space, spaces.Box), "variants of the linear baseline on Box observations"
        self.buffers = {
            name: GroupRolloutBuffer(
                model.n_steps,
                model.observation_space,
                model.action_space,
                device="cpu",
                gae_lambda="auto",
                gamma=model.gamma,
                n_envs=model.n_envs,
                group_options=GroupOptions(**ALGORITHM_DEFAULTS, baseline_kwargs={**kwargs, "fourier_seed": FEATURE_SEED}),
            )
            for name, kwargs in VARIANTS.items()
        }

    def _on_rollout_end(self) -> None:
        source = self.on_policy_model.rollout_buffer
        dones, last_obs = self.locals["dones"], self.locals["new_obs"]
        for name, buffer in self.buffers.items():
            buffer.reset()
            buffer.observations[:] = source.observations
            buffer.rewards[:] = source.rewards
            buffer.episode_starts[:] = source.episode_starts
            buffer.pos, buffer.full = buffer.buffer_size, True
            self._estimate(name, buffer, dones, last_obs)
            self.logger.record(f"variants/{name}", buffer.group_stats["baseline_explained_variance"])
        self.logger.record("variants/lambda", self.buffers["default"].gae_lambda)
        self.logger.record("variants/in_sample", self._in_sample(self.buffers["default"]))

    @staticmethod
    def _estimate(name: str, buffer: GroupRolloutBuffer, dones: np.ndarray, last_obs: np.ndarray) -> None:
        if name != "unprojected":
            buffer.compute_returns_and_advantage(None, dones, last_obs)  # type: ignore[arg-type]
            return
        # the projection's size, set above the observation's for this variant alone (its maps are cached by size)
        kept = fitted_baselines.MAX_OBS_FEATURES
        fitted_baselines.random_maps.cache_clear()
        fitted_baselines.MAX_OBS_FEATURES = max(kept, int(np.prod(buffer.obs_shape)))
        try:
            buffer.compute_returns_and_advantage(None, dones, last_obs)  # type: ignore[arg-type]
        finally:
            fitted_baselines.MAX_OBS_FEATURES = kept
            fitted_baselines.random_maps.cache_clear()

    @staticmethod
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
