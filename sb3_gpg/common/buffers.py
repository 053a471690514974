from collections import deque
from collections.abc import Generator
from dataclasses import replace
from typing import Any, cast

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import DictRolloutBuffer, RolloutBuffer
from stable_baselines3.common.type_aliases import DictRolloutBufferSamples, RolloutBufferSamples
from stable_baselines3.common.vec_env import VecNormalize

from sb3_gpg.common.observation_space import box_keys, options_for_space
from sb3_gpg.common.swap_guards.foreign_loads import foreign_load_error
from sb3_gpg.estimator import GROUP_OPTION_NAMES, GroupOptions, estimate
from sb3_gpg.estimator.auto_lambda import AUTO_LAMBDA, WINDOW, chosen_lambda
from sb3_gpg.estimator.baseline_memory import BaselineMemory, MemoryState
from sb3_gpg.estimator.fitted_baselines import FITTED_BASELINES, remembered_rollouts
from sb3_gpg.estimator.optimism import goal_hidden, read_goal
from sb3_gpg.estimator.returns import episode_times


class BaseGroupRolloutBuffer(RolloutBuffer):
    """
    Rollout buffer of Group Policy Gradient (GPG): the advantage of a sample is its discounted Monte-Carlo return
    minus the group baseline of its bin, the mean first-visit return of the rollout's trajectories in that bin.

    It keeps ``RolloutBuffer``'s interface and sampling, and stores the samples; ``compute_returns_and_advantage``
    hands them to the estimator (``sb3_gpg.estimator.estimate``), after which ``returns`` holds the returns, ``values``
    the baselines and ``advantages`` their difference (or, with ``gae_lambda`` < 1, GAE's lambda-return over the
    baselines). The episode time of every sample (``episode_times``) is derived from the ``episode_start`` flags in
    ``compute_returns_and_advantage`` too, and carries across rollouts, as does the linear baseline's memory of the last
    rollouts (``baseline_kwargs["memory"]``, or ``"pooled_memory"`` where more), which is not saved with a model: a
    loaded model's refills.

    :param buffer_size: Number of steps per env in a rollout (n_steps)
    :param observation_space: Observation space
    :param action_space: Action space
    :param device: PyTorch device
    :param gae_lambda: GAE's lambda over the baselines, in [0, 1]; 1: advantages are returns minus baselines;
        ``"auto"``: chosen for each rollout, PPO's 0.95 where the last rollouts' fitted baselines explained too little
        of their returns, else 1 (``sb3_gpg.estimator.auto_lambda``); 1 under the bins
    :param gamma: Discount factor
    :param n_envs: Number of parallel environments
    :param group_options: GPG's own options (the algorithms pass theirs); None: from those of ``kwargs``. A
        class's name (what a GPG file holds there: another algorithm's ``load`` passes it on) is refused
    :param kwargs: GPG's own options by name, without ``group_options`` (``GroupOptions``: ``binning``, ``bin_size``,
        ``leave_one_out``, ``min_bin_count``, ``truncated_returns``, ``advantage_scale``, ``baseline``,
        ``baseline_kwargs``), and the keyword arguments of the next buffer class in the MRO (``hidden_state_shape`` for
        the recurrent buffers)
    """

    def __init__(
        self,
        buffer_size: int,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        device: th.device | str = "auto",
        gae_lambda: float | str = 1.0,
        gamma: float = 0.99,
        n_envs: int = 1,
        group_options: GroupOptions | str | None = None,
        **kwargs,
    ):
        if isinstance(group_options, str):
            raise foreign_load_error(group_options)
        if group_options is None:
            group_options = GroupOptions(**{name: kwargs.pop(name) for name in GROUP_OPTION_NAMES if name in kwargs})
        self.group_options = _with_feature_seed(options_for_space(group_options, observation_space))
        # gae_lambda="auto": chosen per rollout from the last rollouts' explained variance (``auto_lambda``), 1 at first;
        # its threshold reads a fitted baseline's, so under the bins it is 1
        given_auto = isinstance(gae_lambda, str) and gae_lambda == AUTO_LAMBDA
        self.auto_lambda = given_auto and self.group_options.baseline in FITTED_BASELINES
        self._explained: deque[float] = deque(maxlen=WINDOW)
        if given_auto:
            gae_lambda = 1.0
        elif isinstance(gae_lambda, str) or not 0.0 <= gae_lambda <= 1.0:
            raise ValueError(
                f"gae_lambda must be in [0, 1] or 'auto', got {gae_lambda!r}: 1.0 gives Monte-Carlo advantages, 'auto' "
                "PPO's 0.95 where the fitted baselines explain too little of the returns, else 1."
            )
        fits_lambda_returns = (self.group_options.baseline_kwargs or {}).get("target") == "lambda_returns"
        if fits_lambda_returns and gae_lambda == 1.0 and not given_auto:
            # an argument that would change nothing: lambda-returns at lambda 1 are the returns
            raise ValueError(
                "baseline_kwargs['target']='lambda_returns' fits the baseline on its lambda-returns with GAE's lambda, "
                "but gae_lambda=1.0 makes them the Monte-Carlo returns, which the default target ('auto') "
                "fits at 1: set gae_lambda below 1 (PPO's default is 0.95), or drop target."
            )
        if not self.auto_lambda:  # else the estimator reads the target for each rollout's lambda
            self.group_options = _with_target(self.group_options, gae_lambda)
        # Flat, as the algorithms hold them
        vars(self).update(self.group_options.as_kwargs())
        self.feature_keys = box_keys(observation_space)
        # Episode time of the next sample of each env; carried across rollouts, so not cleared by reset()
        self._next_episode_times = np.zeros(n_envs, dtype=np.int64)
        self._episode_times_computed = False
        self.baseline_memory = BaselineMemory(
            remembered_rollouts(self.group_options.baseline_kwargs), goal_lapses=self.auto_lambda
        )
        # A rollout's estimate computed again (before the next reset) reads the memory as it was before the first
        # time, and replaces what that one added
        self._memory_before: tuple[MemoryState, list[float]] | None = None
        self.pos = 0  # read by reset(), which the parent's __init__ calls
        self.group_stats: dict[str, float] = {}
        # Samples that enter the loss, flattened as `get` flattens (env-major); None when all do
        self.in_loss: np.ndarray | None = None
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

    def reset_estimator_state(self) -> None:
        """
        Forget the linear baseline's memory and the explained variance that ``gae_lambda="auto"`` reads (another env,
        e.g. ``set_env``, has returns of its own). The episode times restart by themselves where the env is reset (its
        first step starts an episode).
        """
        self.baseline_memory.clear()
        self._explained.clear()
        self._memory_before = None

    def reset(self) -> None:
        if self.pos > 0 and not self._episode_times_computed:
            # A rollout stopped early (by a callback): carry its episode times over, as its episodes go on
            self._fill_episode_times(self.pos)
        self._episode_times_computed = False
        self._memory_before = None
        self.episode_times = np.zeros((self.buffer_size, self.n_envs), dtype=np.int64)
        self.in_loss = None
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
        Monte-Carlo returns, group baselines and advantages of the rollout (see ``estimate``).

        :param last_values: Ignored: GPG has no critic (accepted for ``RolloutBuffer``'s interface)
        :param dones: whether each env's last step ended its episode
        :param last_obs: the observation after the rollout, as the VecEnv gave it; needed by
            ``truncated_returns="bootstrap"`` with a binning that reads observations or a fitted baseline
        """
        if not self._episode_times_computed:
            self._fill_episode_times(self.buffer_size)
        memory = self.baseline_memory
        if self._memory_before is None:
            self._memory_before = (memory.state(), list(self._explained))
        else:  # computed again: as the first time
            memory.restore(self._memory_before[0])
            self._explained.clear()
            self._explained.extend(self._memory_before[1])
        if self.auto_lambda:
            waits = self.group_options.linear_optimism and goal_hidden(
                self.rewards,
                read_goal(self.rewards, self.episode_starts, self.episode_times, dones, memory.longest_episode).seen,
                memory.goal_seen,
            )
            self.gae_lambda = chosen_lambda(self._explained, waits)
        bootstraps = self.group_options.truncated_returns == "bootstrap" and last_obs is not None
        result = estimate(
            self.observations,
            self.rewards,
            self.episode_starts,
            dones,
            self._as_buffer_rows(last_obs) if bootstraps else None,
            episode_times=self.episode_times,
            options=self.group_options,
            gamma=self.gamma,
            gae_lambda=self.gae_lambda,
            feature_keys=self.feature_keys,
            memory=memory,
        )
        if result.memory_entry is not None:
            memory.remember(result.memory_entry, result.last_fit)
        self.returns[:], self.values[:], self.advantages[:] = result.returns, result.baselines, result.advantages
        self.in_loss, self.explained_variance, self.group_stats = result.in_loss, result.explained_variance, result.stats
        if self.auto_lambda:
            self._explained.append(result.stats["baseline_explained_variance"])
            self.group_stats = {**result.stats, "gae_lambda": self.gae_lambda}

    def _fill_episode_times(self, n_rows: int) -> None:
        """
        Fill the first ``n_rows`` of ``self.episode_times``, carrying on from the previous rollout's episodes.
        """
        self.episode_times[:n_rows] = episode_times(self.episode_starts[:n_rows], self._next_episode_times)
        self._next_episode_times = self.episode_times[n_rows - 1] + 1
        self._episode_times_computed = True

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
    the loss. See ``BaseGroupRolloutBuffer`` for the parameters.
    """

    # Set while ``get`` draws its permutation through the parent's ``get``
    _indices_only = False

    # SB3's get is typed for the flat samples only
    def get(self, batch_size: int | None = None) -> Generator[RolloutBufferSamples | DictRolloutBufferSamples, None, None]:  # type: ignore[override]
        """
        Minibatches of ``batch_size`` samples in a random order drawn per call, as ``RolloutBuffer.get`` draws them
        (SB3's ``get`` without a batch size takes the whole permutation in one ``_get_samples`` call;
        ``tests/test_buffers.py`` pins that): the samples out of the loss are taken out of the permutation first, so
        that minibatches are full, and each is gathered when it is reached, so that no copy of the whole rollout is
        held (it would double the memory of large observations).
        """
        self._indices_only = True
        try:
            (permutation,) = super().get()
        finally:
            self._indices_only = False
        indices = cast(np.ndarray, permutation)  # what _get_samples returns while _indices_only
        batch_size = batch_size or len(indices)
        for start in range(0, len(indices), batch_size):
            yield self._get_samples(indices[start : start + batch_size])

    def _get_samples(self, batch_inds: np.ndarray, env: VecNormalize | None = None):
        if self.in_loss is not None:
            batch_inds = batch_inds[self.in_loss[batch_inds]]
        if self._indices_only:
            return batch_inds
        return super()._get_samples(batch_inds, env)


def _with_feature_seed(options: GroupOptions) -> GroupOptions:
    """
    :return: the options with the linear baseline's ``fourier_seed`` drawn where it is None: from NumPy's global
        generator, which SB3 seeds with the model's seed before it builds the buffer, so that each seed of a model
        gets its own random features, and a model with a seed, built again (a load), the same
    """
    kwargs = options.baseline_kwargs
    if options.baseline != "linear" or kwargs is None or kwargs.get("fourier_seed", 0) is not None:
        return options
    return replace(options, baseline_kwargs={**kwargs, "fourier_seed": int(np.random.randint(2**31 - 1))})


def _with_target(options: GroupOptions, gae_lambda: float) -> GroupOptions:
    """
    :return: the options with the linear baseline's ``target="auto"`` made concrete for GAE's lambda, as
        ``estimator_options`` shows it: its own lambda-returns below 1, the returns at 1
    """
    kwargs = options.baseline_kwargs
    if options.baseline != "linear" or kwargs is None or kwargs.get("target") != "auto":
        return options
    return replace(options, baseline_kwargs={**kwargs, "target": "lambda_returns" if gae_lambda < 1.0 else "returns"})


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
