import time
from collections.abc import Generator
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import DictRolloutBuffer, RolloutBuffer
from stable_baselines3.common.type_aliases import DictRolloutBufferSamples, RolloutBufferSamples
from stable_baselines3.common.utils import explained_variance
from stable_baselines3.common.vec_env import VecNormalize

from sb3_gpg.common.binning import Binning, binning_levels
from sb3_gpg.common.fitted_baselines import (
    cross_fitted_baselines,
    fitted_values,
    knn_features,
    linear_features,
    standardise,
    trajectory_folds,
)
from sb3_gpg.common.group_baseline import advantage_stats, group_baselines, group_bootstrap
from sb3_gpg.common.group_options import GROUP_OPTION_NAMES, GroupOptions
from sb3_gpg.common.returns import (
    completed_returns,
    discounted_returns,
    env_major,
    episode_times,
    lambda_advantages,
    trajectory_ids,
)
from sb3_gpg.common.rollout_keys import (
    OBSERVATION_BINNINGS,
    box_observations,
    check_observation_binning,
    flat_obs_dim,
    map_arrays,
    rollout_bin_keys,
)


class BaseGroupRolloutBuffer(RolloutBuffer):
    """
    Rollout buffer of Group Policy Gradient (GPG): the advantage of a sample is its discounted Monte-Carlo return
    minus the group baseline of its bin, the mean first-visit return of the rollout's trajectories in that bin.

    It keeps ``RolloutBuffer``'s interface and sampling; only ``compute_returns_and_advantage`` changes, after which
    ``returns`` holds the returns, ``values`` the baselines and ``advantages`` their difference (or, with
    ``gae_lambda`` < 1, GAE's lambda-return over the baselines). The episode time of
    every sample (``episode_times``) is derived from the ``episode_start`` flags in ``compute_returns_and_advantage``
    too, and carries across rollouts.

    :param buffer_size: Number of steps per env in a rollout (n_steps)
    :param observation_space: Observation space
    :param action_space: Action space
    :param device: PyTorch device
    :param gae_lambda: GAE's lambda over the baselines, in [0, 1]; 1: advantages are returns minus baselines
    :param gamma: Discount factor
    :param n_envs: Number of parallel environments
    :param kwargs: GPG's own options (``GroupOptions``: ``binning``, ``bin_size``, ``leave_one_out``,
        ``min_bin_count``, ``truncated_returns``, ``advantage_scale``, ``baseline``, ``baseline_kwargs``), and the
        keyword arguments of the next buffer class in the MRO (``hidden_state_shape`` for the recurrent buffers)
    """

    def __init__(
        self,
        buffer_size: int,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        device: th.device | str = "auto",
        gae_lambda: float = 1.0,
        gamma: float = 0.99,
        n_envs: int = 1,
        **kwargs,
    ):
        options = GroupOptions(**{name: kwargs.pop(name) for name in GROUP_OPTION_NAMES if name in kwargs})
        self.bin_size = options.check(flat_obs_dim(observation_space))
        check_observation_binning(options.binning, observation_space, options.baseline)
        if not 0.0 <= gae_lambda <= 1.0:
            raise ValueError(f"gae_lambda must be in [0, 1], got {gae_lambda}: 1.0 gives Monte-Carlo advantages.")
        self.binning = options.binning
        self.leave_one_out = options.leave_one_out
        self.min_bin_count = int(options.min_bin_count)
        self.truncated_returns = options.truncated_returns
        self.advantage_scale = options.advantage_scale
        self.baseline = options.baseline
        self.baseline_kwargs = options.checked_baseline_kwargs()
        # Episode time of the next sample of each env; carried across rollouts, so not cleared by reset()
        self._next_episode_times = np.zeros(n_envs, dtype=np.int64)
        self._episode_times_computed = False
        self.pos = 0  # read by reset(), which the parent's __init__ calls
        self.group_stats: dict[str, float] = {}
        # Samples that enter the loss, flattened as `get` flattens (env-major); None when all do
        self.loss_mask: np.ndarray | None = None
        super().__init__(
            buffer_size,
            observation_space,
            action_space,
            device=device,
            gae_lambda=gae_lambda,
            gamma=gamma,
            n_envs=n_envs,
            **kwargs,
        )

    def reset(self) -> None:
        if self.pos > 0 and not self._episode_times_computed:
            # A rollout stopped early (by a callback): carry its episode times over, as its episodes go on
            self._fill_episode_times(self.pos)
        self._episode_times_computed = False
        self.episode_times = np.zeros((self.buffer_size, self.n_envs), dtype=np.int64)
        self.loss_mask = None
        self.explained_variance = float("nan")
        super().reset()

    def add(self, obs, action, reward, episode_start, value, log_prob, **kwargs) -> None:
        """
        Add one step of every env; see ``RolloutBuffer.add``. Keyword arguments go to the next class in the MRO
        (``action_masks`` for the maskable buffers).

        :raises ValueError: if a reward or a float observation is NaN or infinite
        """
        self._check_finite("reward", reward)
        for key, value_ in obs.items() if isinstance(obs, dict) else [("observation", obs)]:
            self._check_finite(key, value_)
        super().add(obs, action, reward, episode_start, value, log_prob, **kwargs)

    def _check_finite(self, name: str, array: np.ndarray) -> None:
        array = np.asarray(array)
        if array.dtype.kind != "f" or np.isfinite(array).all():
            return
        per_env = array.reshape(self.n_envs, -1)
        bad_envs = np.flatnonzero(~np.isfinite(per_env).all(axis=1)).tolist()
        raise ValueError(
            f"Non-finite {name} at rollout step {self.pos}, env(s) {bad_envs}: {per_env[bad_envs[0]]}. It would turn "
            "GPG's returns and the group baselines of the whole rollout into NaN. Fix the environment, or wrap it in "
            "VecCheckNan(env, raise_exception=True) to find the step that produces it."
        )

    def compute_returns_and_advantage(self, last_values: th.Tensor, dones: np.ndarray, last_obs: Any = None) -> None:
        """
        Monte-Carlo returns, group baselines and advantages of the rollout.

        :param last_values: Ignored: GPG has no critic (accepted for ``RolloutBuffer``'s interface)
        :param dones: whether each env's last step ended its episode
        :param last_obs: the observation after the rollout, as the VecEnv gave it; needed by
            ``truncated_returns="bootstrap"`` with a binning that reads observations or a fitted baseline
        """
        start = time.perf_counter()
        self._fill_episode_times(self.buffer_size)
        last_dones = np.asarray(dones, dtype=bool).reshape(self.n_envs)
        self.returns[:], cut = discounted_returns(self.rewards, self.episode_starts, last_dones, self.gamma)
        ids = trajectory_ids(self.episode_starts)
        bootstrap_stats: dict[str, float]
        values_at_cut, bootstrap_stats = np.zeros(self.n_envs), {}
        if self.truncated_returns == "bootstrap":
            completion, bootstrap_stats = self._values_at_cut(cut, ids, last_obs)
            if completion is not None:
                self.returns[:] = completed_returns(self.returns, cut, completion, self.gamma)
                values_at_cut = completion
        # Samples in the group: all, or under "mask" those whose returns the rollout's end did not cut
        in_group = ~env_major(cut) if self.truncated_returns == "mask" else np.ones(cut.size, dtype=bool)
        returns = env_major(self.returns)
        baselines, scales, stats = group_baselines(
            self._level_keys(in_group),
            ids[in_group],
            returns[in_group],
            self.leave_one_out,
            self.min_bin_count,
            scale_by_bin_std=self.advantage_scale == "bin_std",
        )
        fitted = self._fitted_baselines(ids[in_group], returns[in_group], in_group)
        if fitted is not None:
            baselines = out_of_fold = fitted
        elif self.leave_one_out:
            out_of_fold = baselines
        else:  # the bins' baselines without the sample's own trajectory, for the diagnostic alone
            out_of_fold = group_baselines(
                self._level_keys(in_group), ids[in_group], returns[in_group], True, self.min_bin_count
            ).baselines

        flat_baselines = returns.astype(np.float64)  # samples outside the group get advantage 0
        flat_baselines[in_group] = baselines
        self.values[:] = flat_baselines.reshape(self.n_envs, self.buffer_size).T
        if self.gae_lambda == 1.0 and self.advantage_scale == "none":
            self.advantages[:] = self.returns - self.values
        else:
            # In float64 before any division: the float32 difference of a return and its rounded baseline would be
            # scaled up with the rest
            flat_advantages = returns - flat_baselines
            if self.gae_lambda != 1.0:
                step_major = flat_baselines.reshape(self.n_envs, self.buffer_size).T
                flat_advantages = env_major(
                    lambda_advantages(
                        self.rewards, step_major, self.episode_starts, last_dones, values_at_cut, self.gamma, self.gae_lambda
                    )
                )
                flat_advantages[~in_group] = 0.0
            flat_advantages[in_group] /= scales
            self.advantages[:] = flat_advantages.reshape(self.n_envs, self.buffer_size).T
        self.loss_mask = None if in_group.all() else in_group
        # How much of the returns the baselines explain, over the samples in the loss
        if in_group.any():
            self.explained_variance = float(explained_variance(env_major(self.values)[in_group], returns[in_group]))
        out_of_fold_variance = float(explained_variance(out_of_fold, returns[in_group])) if in_group.any() else 0.0
        self.group_stats = {
            **stats,
            **advantage_stats(ids[in_group], returns[in_group], baselines),
            "truncated_share": float(cut.mean()),
            **bootstrap_stats,
            "baseline_explained_variance": out_of_fold_variance,
            "fitted_baseline_fallback": float(self.baseline != "bins" and fitted is None),
            "advantage_time": time.perf_counter() - start,
        }

    def _level_keys(self, in_group: np.ndarray) -> Generator[np.ndarray, None, None]:
        """
        :return: the bin keys of the group's samples (env-major), per binning level, finest first, computed lazily
        """
        for level in binning_levels(self.binning):
            yield env_major(self._bin_keys(level))[in_group]

    def _baseline_features(self, observations: Any, times: np.ndarray) -> np.ndarray:
        """
        :param observations: observations with one leading row per sample (a dict of such arrays for Dict spaces)
        :param times: their episode times
        :return: the fitted baseline's features (see ``fitted_baselines``), before the knn's standardisation
        """
        flat_obs = box_observations(observations, self.observation_space, len(times))
        return (linear_features if self.baseline == "linear" else knn_features)(flat_obs, times)

    def _rollout_features(self) -> np.ndarray:
        """
        :return: the fitted baseline's features of every sample of the rollout, env-major
        """
        observations = map_arrays(self.observations, lambda array: array.swapaxes(0, 1))
        return self._baseline_features(observations, env_major(self.episode_times))

    def _fitted_baselines(self, ids: np.ndarray, returns: np.ndarray, in_group: np.ndarray) -> np.ndarray | None:
        """
        :param ids: trajectory of every sample of the group
        :param returns: their returns
        :param in_group: which of the rollout's samples (env-major) are in the group
        :return: the cross-fitted baseline of every sample of the group; None with ``baseline="bins"``, or when the
            group holds a single trajectory (its bins' baselines are used then)
        """
        folds = None if self.baseline == "bins" else trajectory_folds(ids, self.baseline_kwargs["n_folds"])
        if folds is None:
            return None
        features = self._rollout_features()[in_group]
        if self.baseline == "knn":
            (features,) = standardise(features)
        return cross_fitted_baselines(self.baseline, features, returns, folds, **self.baseline_kwargs)

    def _values_at_cut(self, cut: np.ndarray, ids: np.ndarray, last_obs: Any) -> tuple[np.ndarray | None, dict[str, float]]:
        """
        The group's value of each env's state after the rollout: ``group_bootstrap`` over the complete returns, or
        the fitted baseline's, fitted on them.

        :param cut: which samples' returns the rollout's end cut, shape (n_steps, n_envs)
        :param ids: trajectory of every sample, env-major
        :return: the value of each env's state after the rollout (0 where none was found; None when no return was
            cut), and diagnostics: ``bootstrapped_share`` (samples whose return was completed) and ``bootstrap_mean``
            (mean value added at the cut, over the envs that got one)
        """
        cut_envs = cut[-1]  # an env's cut trajectory is its last one
        if not cut_envs.any():
            return None, {"bootstrapped_share": 0.0, "bootstrap_mean": 0.0}
        if last_obs is None and (callable(self.binning) or self.binning in OBSERVATION_BINNINGS or self.baseline != "bins"):
            raise ValueError(
                f"truncated_returns='bootstrap' with {self.binning} binning and baseline={self.baseline!r} reads the "
                "observation after the rollout: pass it as compute_returns_and_advantage(..., last_obs=...)."
            )
        complete = ~env_major(cut)
        next_obs = None if last_obs is None else self._as_buffer_rows(last_obs)
        # _fill_episode_times has moved on to the episode time of the step after the rollout
        next_times = self._next_episode_times
        if self.baseline != "bins" and complete.any():
            features = self._rollout_features()[complete]
            queries = self._baseline_features(next_obs, next_times)[cut_envs]
            if self.baseline == "knn":
                features, queries = standardise(features, queries)
            values = fitted_values(self.baseline, features, env_major(self.returns)[complete], queries, **self.baseline_kwargs)
            return self._completion(cut, values, np.ones(len(values), dtype=bool))

        def level_keys():
            for level in binning_levels(self.binning):
                keys = self._bin_keys(level, next_obs, next_times)
                yield env_major(keys[:-1])[complete], keys[-1][cut_envs]

        values, found = group_bootstrap(level_keys(), ids[complete], env_major(self.returns)[complete], self.min_bin_count)
        return self._completion(cut, values, found)

    def _completion(self, cut: np.ndarray, values: np.ndarray, found: np.ndarray) -> tuple[np.ndarray, dict[str, float]]:
        """
        :param values: the value of each cut env's state after the rollout
        :param found: whether each has one
        :return: the value after the rollout of every env (0 where none), and the bootstrap's diagnostics
        """
        cut_envs = cut[-1]
        at_cut = np.zeros(self.n_envs)
        at_cut[cut_envs] = values
        completed_envs = np.zeros(self.n_envs, dtype=bool)
        completed_envs[np.flatnonzero(cut_envs)[found]] = True
        return at_cut, {
            "bootstrapped_share": float(np.mean(cut & completed_envs)),
            "bootstrap_mean": float(values[found].mean()) if found.any() else 0.0,
        }

    def _fill_episode_times(self, n_rows: int) -> None:
        """
        Fill the first ``n_rows`` of ``self.episode_times``, carrying on from the previous rollout's episodes.
        """
        self.episode_times[:n_rows] = episode_times(self.episode_starts[:n_rows], self._next_episode_times)
        self._next_episode_times = self.episode_times[n_rows - 1] + 1
        self._episode_times_computed = True

    def _bin_keys(self, binning: Binning, next_obs: Any = None, next_times: np.ndarray | None = None) -> np.ndarray:
        """
        :return: the bin key of every sample, shape (n_steps, n_envs), or (n_steps + 1, n_envs) with the keys of
            the states after the rollout (see ``rollout_bin_keys``)
        """
        return rollout_bin_keys(binning, self.observations, self.episode_times, self.bin_size, next_obs, next_times)

    def _as_buffer_rows(self, obs: Any) -> Any:
        """
        :return: one step's observations of every env as ``add`` stores them (its dtype, and Discrete ones reshaped)
        """
        if isinstance(self.observations, dict):
            return {
                # SB3's obs_shape: a tuple, or a dict of them (Dict spaces, as here)
                key: np.asarray(obs[key], dtype=array.dtype).reshape((self.n_envs, *self.obs_shape[key]))  # type: ignore[misc]
                for key, array in self.observations.items()
            }
        return np.asarray(obs, dtype=self.observations.dtype).reshape((self.n_envs, *self.obs_shape))


class GroupRolloutBuffer(BaseGroupRolloutBuffer):
    """
    ``BaseGroupRolloutBuffer`` whose minibatches leave out the samples that ``truncated_returns="mask"`` keeps out of
    the loss, and are gathered once per call of ``get`` rather than one by one. See ``BaseGroupRolloutBuffer`` for the
    parameters.
    """

    # SB3's get is typed for the flat samples only
    def get(self, batch_size: int | None = None) -> Generator[RolloutBufferSamples | DictRolloutBufferSamples, None, None]:  # type: ignore[override]
        """
        Minibatches of ``batch_size`` samples in a random order drawn per call, as ``RolloutBuffer.get`` draws them:
        SB3's ``get`` without a batch size gathers the whole permutation in one ``_get_samples`` call
        (``tests/test_buffers.py`` pins that), and the minibatches are slices of it.
        """
        (shuffled,) = super().get()
        n_samples = len(shuffled.advantages)
        batch_size = batch_size or n_samples
        for start in range(0, n_samples, batch_size):
            yield type(shuffled)(*(_slice(field, start, start + batch_size) for field in shuffled))

    def _get_samples(self, batch_inds: np.ndarray, env: VecNormalize | None = None):
        if self.loss_mask is not None:
            batch_inds = batch_inds[self.loss_mask[batch_inds]]
        return super()._get_samples(batch_inds, env)


def _slice(field: Any, start: int, stop: int) -> Any:
    """
    :return: rows ``start:stop`` of a samples field: a tensor, or a dict of tensors for Dict observations
    """
    if isinstance(field, dict):
        return {key: tensor[start:stop] for key, tensor in field.items()}
    return field[start:stop]


# SB3 types each buffer's get for its own samples
class GroupDictRolloutBuffer(GroupRolloutBuffer, DictRolloutBuffer):  # type: ignore[misc]
    """
    ``GroupRolloutBuffer`` for Dict observation spaces (SB3's ``DictRolloutBuffer`` interface). Spatial and state
    binning use all keys' observations, flattened and concatenated in the space's key order; a binning callable
    receives the dict of arrays.

    :param buffer_size: Number of steps per env in a rollout (n_steps)
    :param observation_space: Dict observation space
    :param action_space: Action space
    :param device: PyTorch device
    :param gae_lambda: see ``BaseGroupRolloutBuffer``
    :param gamma: Discount factor
    :param n_envs: Number of parallel environments
    :param kwargs: GPG's own options (``GroupOptions``)
    """

    observations: dict[str, np.ndarray]


def group_buffer_class(
    algorithm: str,
    given: type[RolloutBuffer] | None,
    classes: tuple[type[BaseGroupRolloutBuffer], type[BaseGroupRolloutBuffer]],
    observation_space: spaces.Space,
) -> type[RolloutBuffer]:
    """
    :param algorithm: the name of the algorithm
    :param given: its ``rollout_buffer_class`` argument
    :param classes: the algorithm's group buffers, for flat and for Dict observations
    :param observation_space: the observation space
    :return: the buffer to use: the one given, or the algorithm's for the observation space
    :raises ValueError: for a buffer that does not compute group advantages
    """
    flat_buffer, dict_buffer = classes
    if given is None:
        return dict_buffer if isinstance(observation_space, spaces.Dict) else flat_buffer
    if not issubclass(given, classes):
        raise ValueError(
            f"{algorithm} computes its advantages in a {flat_buffer.__name__}, got rollout_buffer_class="
            f"{given}: pass a subclass of {flat_buffer.__module__}.{flat_buffer.__name__} (or "
            f"{dict_buffer.__name__}), or leave it None."
        )
    return given
