from collections.abc import Callable, Generator, Sequence
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import DictRolloutBuffer, RolloutBuffer
from stable_baselines3.common.preprocessing import get_obs_shape, is_image_space
from stable_baselines3.common.type_aliases import DictRolloutBufferSamples, RolloutBufferSamples
from stable_baselines3.common.vec_env import VecNormalize

from sb3_gpg.common.binning import Binning, bin_keys, binning_levels, check_group_arguments
from sb3_gpg.common.group_baseline import group_baselines, group_bootstrap

OBSERVATION_BINNINGS = ("spatial", "spatial_time", "state")
# An advantage this small relative to its return counts as 0 in the diagnostics: a bin's mean of equal returns can
# differ from each of them by rounding
ZERO_ADVANTAGE_TOLERANCE = 1e-9


def _is_discrete_space(space: spaces.Space) -> bool:
    if isinstance(space, spaces.Dict):
        return all(_is_discrete_space(subspace) for subspace in space.spaces.values())
    if isinstance(space, spaces.Box):
        return np.issubdtype(space.dtype, np.integer)
    return isinstance(space, (spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary))


def has_image_space(space: spaces.Space) -> bool:
    """
    :return: whether the space, or one of a Dict space's subspaces, holds images
    """
    if isinstance(space, spaces.Dict):
        return any(has_image_space(subspace) for subspace in space.spaces.values())
    return is_image_space(space, check_channels=False)


def _flat_obs_dim(space: spaces.Space) -> int:
    if isinstance(space, spaces.Dict):
        return sum(_flat_obs_dim(subspace) for subspace in space.spaces.values())
    return int(np.prod(get_obs_shape(space)))  # type: ignore[arg-type]


def _map_arrays(observations: Any, function: Callable[[np.ndarray], Any]) -> Any:
    """
    :return: ``function`` of the observations' array, or a dict of it per key for Dict observations
    """
    if isinstance(observations, dict):
        return {key: function(array) for key, array in observations.items()}
    return function(observations)


def _map_tensors(samples: RolloutBufferSamples | DictRolloutBufferSamples, function: Callable[[th.Tensor], th.Tensor]):
    """
    :return: samples of the same type with ``function`` applied to every tensor (those of dict observations too)
    """
    return type(samples)(
        *(
            {key: function(tensor) for key, tensor in field.items()} if isinstance(field, dict) else function(field)
            for field in samples
        )
    )


class GroupRolloutBuffer(RolloutBuffer):
    """
    Rollout buffer of Group Policy Gradient (GPG): the advantage of a sample is its discounted Monte-Carlo return
    minus the group baseline of its bin, the mean first-visit return of the rollout's trajectories in that bin.

    It keeps ``RolloutBuffer``'s interface; only ``compute_returns_and_advantage`` changes, after which ``returns``
    holds the returns, ``values`` the baselines and ``advantages`` their difference. The episode time of every sample
    (``episode_times``) is derived from the ``episode_start`` flags in ``compute_returns_and_advantage`` too, and
    carries across rollouts.

    :param buffer_size: Number of steps per env in a rollout (n_steps)
    :param observation_space: Observation space
    :param action_space: Action space
    :param device: PyTorch device
    :param gae_lambda: Ignored: GPG's returns are Monte-Carlo (accepted for ``RolloutBuffer``'s interface)
    :param gamma: Discount factor
    :param n_envs: Number of parallel environments
    :param binning: ``"time"`` (episode time), ``"rollout_step"`` (row in the rollout), ``"universal"`` (one bin),
        ``"spatial"`` (Round(obs / bin_size)), ``"spatial_time"`` (both), ``"state"`` (the observation itself, for
        discrete observation spaces), or a callable ``f(obs, t) -> keys`` with obs of shape (n_steps, n_envs, ...)
        (a dict of such arrays for Dict spaces), t the episode times (n_steps, n_envs), and one integer key per sample
    :param bin_size: epsilon of the spatial bins, one float or one value per flattened observation dimension
    :param leave_one_out: leave the sample's own trajectory out of its baseline
    :param min_bin_count: a bin holding fewer returns (other trajectories' only, under ``leave_one_out``) takes its
        baseline from the next coarser binning (spatial_time -> time -> universal; others -> universal); where even
        universal holds too few, the advantage is 0
    :param truncated_returns: ``"keep"`` uses returns cut by the rollout's end as they are (as in the paper);
        ``"mask"`` leaves those samples out of the bins and out of the loss; ``"bootstrap"`` completes them with the
        group's estimate of what follows: ``gamma**k`` times the mean first-visit return, among the rollout's complete
        (not cut) returns, of the bin of the env's next state (with ``min_bin_count`` and the fallbacks; 0 where no
        level has enough), k steps after the sample
    :param advantage_scale: ``"none"``, or ``"bin_std"``: every advantage is divided by the standard deviation of
        the first-visit returns of the bin its baseline came from (the next coarser bin's where that one holds fewer
        than two returns or no spread; 1 where none has)
    :param kwargs: keyword arguments of the next buffer class in the MRO (``hidden_state_shape`` for the recurrent
        buffers)
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
        binning: Binning = "time",
        bin_size: float | Sequence[float] = 1.0,
        leave_one_out: bool = False,
        min_bin_count: int = 1,
        truncated_returns: str = "keep",
        advantage_scale: str = "none",
        **kwargs,
    ):
        self.bin_size = check_group_arguments(
            binning, bin_size, min_bin_count, truncated_returns, _flat_obs_dim(observation_space), advantage_scale
        )
        if binning in OBSERVATION_BINNINGS:
            self._check_observation_binning(binning, observation_space)
        self.binning = binning
        self.leave_one_out = leave_one_out
        self.min_bin_count = int(min_bin_count)
        self.truncated_returns = truncated_returns
        self.advantage_scale = advantage_scale
        # Episode time of the next sample of each env; carried across rollouts, so not cleared by reset()
        self._next_episode_times = np.zeros(n_envs, dtype=np.int64)
        self._episode_times_computed = False
        self.pos = 0  # read by reset(), which the parent's __init__ calls
        self.group_stats: dict[str, float] = {}
        # Samples that enter the loss, flattened as `get` flattens (env-major); None when all do
        self.loss_mask: np.ndarray | None = None
        self._building_rollout_tensors = False
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

    @staticmethod
    def _check_observation_binning(binning: str, observation_space: spaces.Space) -> None:
        if has_image_space(observation_space):
            raise ValueError(
                f"{binning} binning on image observations puts almost every sample in a bin of its own (one cell per "
                "pixel value), so the baselines equal the returns and the advantages vanish. Use binning='time', or "
                "a callable f(obs, t) -> keys on features you choose."
            )
        if binning == "state" and not _is_discrete_space(observation_space):
            raise ValueError(
                f"state binning needs a discrete observation space (Discrete, MultiDiscrete, MultiBinary or an integer "
                f"Box), got {observation_space}. For continuous observations use binning='spatial' or 'spatial_time' "
                "with a bin_size."
            )

    def reset(self) -> None:
        if self.pos > 0 and not self._episode_times_computed:
            # A rollout stopped early (by a callback): carry its episode times over, as its episodes go on
            self._compute_episode_times(self.pos)
        self._episode_times_computed = False
        self.episode_times = np.zeros((self.buffer_size, self.n_envs), dtype=np.int64)
        self.loss_mask = None
        self._device_samples: RolloutBufferSamples | DictRolloutBufferSamples | None = None
        super().reset()

    def add(self, obs, action, reward, episode_start, value, log_prob, **kwargs) -> None:  # type: ignore[override]
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
            ``truncated_returns="bootstrap"`` with a binning that reads observations
        """
        self._compute_episode_times(self.buffer_size)
        cut_by_rollout_end = self._compute_returns(np.asarray(dones, dtype=bool).reshape(self.n_envs))

        # Env-major order (as `get` flattens) keeps each trajectory's samples in time order, as first visits need
        def env_major(array: np.ndarray) -> np.ndarray:
            return array.swapaxes(0, 1).reshape(-1)

        starts = self.episode_starts.astype(bool)
        starts[0] = True  # a trajectory also starts at the rollout's first row
        trajectory_ids = np.cumsum(env_major(starts)) - 1
        bootstrap_stats = {}
        if self.truncated_returns == "bootstrap":
            bootstrap_stats = self._bootstrap_cut_returns(cut_by_rollout_end, trajectory_ids, env_major, last_obs)
        # Samples in the group: all, or under "mask" those whose returns the rollout's end did not cut
        in_group = ~env_major(cut_by_rollout_end) if self.truncated_returns == "mask" else slice(None)
        returns = env_major(self.returns)
        level_keys = (env_major(self._bin_keys(level))[in_group] for level in binning_levels(self.binning))
        baselines, scales, stats = group_baselines(
            level_keys,
            trajectory_ids[in_group],
            returns[in_group],
            self.leave_one_out,
            self.min_bin_count,
            scale_by_bin_std=self.advantage_scale == "bin_std",
        )

        flat_baselines = returns.astype(np.float64)  # samples outside the group get advantage 0
        flat_baselines[in_group] = baselines
        self.values[:] = flat_baselines.reshape(self.n_envs, self.buffer_size).T
        if self.advantage_scale == "none":
            self.advantages[:] = self.returns - self.values
        else:
            # In float64 before the division: the float32 difference of a return and its rounded baseline would be
            # scaled up with the rest
            flat_advantages = returns - flat_baselines
            flat_advantages[in_group] /= scales
            self.advantages[:] = flat_advantages.reshape(self.n_envs, self.buffer_size).T
        self.loss_mask = None if isinstance(in_group, slice) or in_group.all() else in_group
        # Trajectory ids grow along the env-major order, so each new id is a new trajectory
        n_trajectories = np.count_nonzero(np.diff(trajectory_ids[in_group])) + 1 if len(baselines) else 0
        # Advantages the group leaves at 0 for any reason: no baseline, a bin of the sample's own trajectory alone, or a
        # bin whose returns are all equal (a constant reward per step and episodes that all outlast the rollout)
        group_advantages = (returns - flat_baselines)[in_group]
        flat = np.abs(group_advantages) <= ZERO_ADVANTAGE_TOLERANCE * np.maximum(1.0, np.abs(returns[in_group]))
        self.group_stats = {
            **stats,
            "zero_advantage_share": float(flat.mean()) if len(flat) else 0.0,
            "n_trajectories": float(n_trajectories),
            "truncated_share": float(cut_by_rollout_end.mean()),
            **bootstrap_stats,
        }

    def _bootstrap_cut_returns(
        self, cut: np.ndarray, trajectory_ids: np.ndarray, env_major: Callable[[np.ndarray], np.ndarray], last_obs: Any
    ) -> dict[str, float]:
        """
        Complete the returns cut by the rollout's end: add ``gamma**k`` times the group's value of the env's next state
        (``group_bootstrap`` over the complete returns), k steps after each sample.

        :param cut: which samples' returns the rollout's end cut, shape (n_steps, n_envs)
        :return: diagnostics: ``bootstrapped_share`` (samples whose return was completed) and ``bootstrap_mean``
            (mean value added at the cut, over the envs that got one)
        """
        cut_envs = cut[-1]  # an env's cut trajectory is its last one
        if not cut_envs.any():
            return {"bootstrapped_share": 0.0, "bootstrap_mean": 0.0}
        if last_obs is None and (callable(self.binning) or self.binning in OBSERVATION_BINNINGS):
            raise ValueError(
                f"truncated_returns='bootstrap' with {self.binning} binning bins the observation after the rollout: "
                "pass it as compute_returns_and_advantage(..., last_obs=...)."
            )
        complete = ~env_major(cut)
        next_obs = None if last_obs is None else self._as_buffer_rows(last_obs)
        # _compute_episode_times has moved on to the episode time of the step after the rollout
        next_times = self._next_episode_times

        def level_keys():
            for level in binning_levels(self.binning):
                keys = self._bin_keys(level, next_obs, next_times)
                yield env_major(keys[:-1])[complete], keys[-1][cut_envs]

        values, found = group_bootstrap(
            level_keys(), trajectory_ids[complete], env_major(self.returns)[complete], self.min_bin_count
        )
        at_cut = np.zeros(self.n_envs)
        at_cut[cut_envs] = values
        completed_envs = np.zeros(self.n_envs, dtype=bool)
        completed_envs[np.flatnonzero(cut_envs)[found]] = True
        steps_to_cut = self.buffer_size - np.arange(self.buffer_size)[:, None]
        self.returns += np.where(cut, self.gamma**steps_to_cut * at_cut, 0.0)
        return {
            "bootstrapped_share": float(np.mean(cut & completed_envs)),
            "bootstrap_mean": float(values[found].mean()) if found.any() else 0.0,
        }

    def _compute_episode_times(self, n_rows: int) -> None:
        """
        Fill the first ``n_rows`` of ``self.episode_times``: steps since the last ``episode_start``, or, before the
        rollout's first one, since the start carried over from the previous rollout.
        """
        rows = np.arange(n_rows)[:, None]
        last_start = np.maximum.accumulate(np.where(self.episode_starts[:n_rows] != 0, rows, -1), axis=0)
        self.episode_times[:n_rows] = np.where(last_start >= 0, rows - last_start, self._next_episode_times + rows)
        self._next_episode_times = self.episode_times[n_rows - 1] + 1
        self._episode_times_computed = True

    def _compute_returns(self, dones: np.ndarray) -> np.ndarray:
        """
        Fill ``self.returns`` with the discounted sum of rewards up to the end of the episode or of the rollout.

        :param dones: whether each env's last step ended its episode
        :return: which samples' returns were cut by the rollout's end, shape (n_steps, n_envs)
        """
        ends = np.empty((self.buffer_size, self.n_envs), dtype=bool)
        ends[:-1] = self.episode_starts[1:]
        ends[-1] = dones
        discounts = self.gamma * ~ends
        returns = np.empty((self.buffer_size, self.n_envs), dtype=np.float64)
        returns[-1] = self.rewards[-1]
        for step in reversed(range(self.buffer_size - 1)):
            np.multiply(discounts[step], returns[step + 1], out=returns[step])
            returns[step] += self.rewards[step]
        self.returns[:] = returns
        # Cut: no episode ends at this step or any later one of the rollout
        return ~np.logical_or.accumulate(ends[::-1], axis=0)[::-1]

    def _bin_keys(self, binning: Binning, next_obs: Any = None, next_times: np.ndarray | None = None) -> np.ndarray:
        """
        :param next_obs: the observations after the rollout (one row, as the buffer stores them), if any
        :param next_times: their episode times; given, the keys of the states after the rollout follow as one more
            row, computed with the rollout's (spatial and state keys are only comparable within one computation)
        :return: the bin key of every sample, shape (n_steps, n_envs), or (n_steps + 1, n_envs) with ``next_times``
        """
        with_next = next_times is not None
        if callable(binning):
            keys = self._call_binning(binning, self.observations, self.episode_times)
            if with_next:
                next_rows = _map_arrays(next_obs, lambda rows: rows[None])
                keys = np.concatenate([keys, self._call_binning(binning, next_rows, next_times[None])])
            return keys
        n_rows = self.buffer_size + with_next
        flat_obs = None
        if binning in OBSERVATION_BINNINGS:
            flat_obs = self._flat_observations()
            if with_next:
                flat_obs = np.concatenate([flat_obs, self._flat_observations(next_obs, self.n_envs)])
        times = self.episode_times if not with_next else np.concatenate([self.episode_times, next_times[None]])
        rollout_step = np.broadcast_to(np.arange(n_rows)[:, None], (n_rows, self.n_envs))
        keys = bin_keys(binning, flat_obs, times.reshape(-1), rollout_step.reshape(-1), self.bin_size)
        return keys.reshape(n_rows, self.n_envs)

    def _call_binning(self, binning: Callable, observations: Any, times: np.ndarray) -> np.ndarray:
        keys = np.asarray(binning(observations, times))
        if keys.shape != times.shape or not np.issubdtype(keys.dtype, np.integer):
            raise ValueError(
                f"The binning function {getattr(binning, '__name__', binning)} returned keys of shape {keys.shape} "
                f"and dtype {keys.dtype}; it must return one integer key per sample, shape (n_steps, n_envs) = "
                f"{times.shape}. It receives obs of shape {_map_arrays(observations, np.shape)} and t of shape "
                f"{times.shape}."
            )
        return keys.astype(np.int64, copy=False)

    def _as_buffer_rows(self, obs: Any) -> Any:
        """
        :return: one step's observations of every env as ``add`` stores them (its dtype, and Discrete ones reshaped)
        """
        if isinstance(self.observations, dict):
            return {
                key: np.asarray(obs[key], dtype=array.dtype).reshape((self.n_envs, *self.obs_shape[key]))
                for key, array in self.observations.items()
            }
        return np.asarray(obs, dtype=self.observations.dtype).reshape((self.n_envs, *self.obs_shape))

    def _flat_observations(self, observations: Any = None, n_samples: int | None = None) -> np.ndarray:
        """
        :param observations: observations with ``n_samples`` leading rows (by default the rollout's)
        :return: observations, one row per sample (step-major), shape (n_samples, obs_dim)
        """
        if observations is None:
            observations, n_samples = self.observations, self.buffer_size * self.n_envs
        if isinstance(observations, dict):
            return np.concatenate([obs.reshape(n_samples, -1) for obs in observations.values()], axis=1, dtype=np.float64)
        return observations.reshape(n_samples, -1)

    def to_torch(self, array: np.ndarray, copy: bool = True) -> th.Tensor:
        """
        ``BaseBuffer.to_torch``, except while the rollout's tensors are built: then no copy on the CPU (the arrays
        stay unchanged until the next ``reset``), one transfer to another device.
        """
        return super().to_torch(array, copy=copy and not self._building_rollout_tensors)

    def get(self, batch_size: int | None = None) -> Generator[RolloutBufferSamples | DictRolloutBufferSamples, None, None]:  # type: ignore[override]
        """
        Minibatches of ``batch_size`` samples in a random order drawn per call, as ``RolloutBuffer.get`` draws them,
        less the samples left out of the loss (``loss_mask``). The rollout is gathered in that order once per call
        and the minibatches are slices of it, instead of one gather per minibatch.
        """
        (shuffled,) = super().get()  # one `_get_samples` of the whole random permutation
        n_samples = len(shuffled.advantages)
        batch_size = batch_size or n_samples
        for start in range(0, n_samples, batch_size):
            yield _map_tensors(shuffled, lambda tensor: tensor[start : start + batch_size])  # noqa: B023 (used at once)

    def _get_samples(self, batch_inds: np.ndarray, env: VecNormalize | None = None):  # type: ignore[override]
        if self.loss_mask is not None:
            batch_inds = batch_inds[self.loss_mask[batch_inds]]
        if self._device_samples is None:
            # The whole rollout as tensors once (as SB3 builds a minibatch), rather than a copy of every minibatch in
            # every epoch; on the CPU they share memory with the buffer's arrays (see to_torch)
            self._building_rollout_tensors = True
            try:
                self._device_samples = super()._get_samples(slice(None), env)  # type: ignore[arg-type]
            finally:
                self._building_rollout_tensors = False
        index = th.as_tensor(batch_inds, device=self.device)
        return _map_tensors(self._device_samples, lambda tensor: tensor[index])


class GroupDictRolloutBuffer(GroupRolloutBuffer, DictRolloutBuffer):
    """
    ``GroupRolloutBuffer`` for Dict observation spaces (SB3's ``DictRolloutBuffer`` interface). Spatial and state
    binning use all keys' observations, flattened and concatenated in the space's key order; a binning callable
    receives the dict of arrays.

    :param buffer_size: Number of steps per env in a rollout (n_steps)
    :param observation_space: Dict observation space
    :param action_space: Action space
    :param device: PyTorch device
    :param gae_lambda: Ignored: GPG's returns are Monte-Carlo
    :param gamma: Discount factor
    :param n_envs: Number of parallel environments
    :param binning: see ``GroupRolloutBuffer``
    :param bin_size: see ``GroupRolloutBuffer``
    :param leave_one_out: see ``GroupRolloutBuffer``
    :param min_bin_count: see ``GroupRolloutBuffer``
    :param truncated_returns: see ``GroupRolloutBuffer``
    :param advantage_scale: see ``GroupRolloutBuffer``
    """

    observations: dict[str, np.ndarray]  # type: ignore[assignment]
