"""
The bin keys of a rollout's samples: observations as SB3's rollout buffers store them (arrays of shape
(n_steps, n_envs, ...), or a dict of such arrays for Dict spaces), flattened for the named binnings of ``binning.py``
or handed to a binning callable as they are.
"""

from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.preprocessing import get_obs_shape, is_image_space

from sb3_gpg.common.binning import Binning, bin_keys

OBSERVATION_BINNINGS = ("spatial", "spatial_time", "state")


def is_discrete_space(space: spaces.Space) -> bool:
    """
    :return: whether every observation of the space is integer-valued
    """
    if isinstance(space, spaces.Dict):
        return all(is_discrete_space(subspace) for subspace in space.spaces.values())
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


def flat_obs_dim(space: spaces.Space) -> int:
    """
    :return: the number of values of one flattened observation (all keys' of a Dict space)
    """
    if isinstance(space, spaces.Dict):
        return sum(flat_obs_dim(subspace) for subspace in space.spaces.values())
    return int(np.prod(get_obs_shape(space)))  # type: ignore[arg-type]  # a Dict's shape is a dict; handled above


def check_observation_binning(binning: Binning, observation_space: spaces.Space, baseline: str = "bins") -> None:
    """
    :raises ValueError: for a binning or a fitted baseline that reads observations the space cannot give it (images;
        continuous values for state binning), naming what works
    """
    if baseline != "bins" and (has_image_space(observation_space) or not box_keys(observation_space)):
        raise ValueError(
            f"baseline={baseline!r} fits the returns on the Box observations (a Dict's Box parts), which "
            f"{observation_space} does not give usable features for (images, or no Box part). Use baseline='bins' "
            "with binning='time', 'universal' or 'rollout_step' ('state' for discrete observations), or a callable "
            "binning f(obs, t) -> keys on features you choose."
        )
    if callable(binning) or binning not in OBSERVATION_BINNINGS:
        return
    if has_image_space(observation_space):
        raise ValueError(
            f"{binning} binning on image observations puts almost every sample in a bin of its own (one cell per "
            "pixel value), so the baselines equal the returns and the advantages vanish. Use binning='time', or "
            "a callable f(obs, t) -> keys on features you choose."
        )
    if binning == "state" and not is_discrete_space(observation_space):
        raise ValueError(
            f"state binning needs a discrete observation space (Discrete, MultiDiscrete, MultiBinary or an integer "
            f"Box), got {observation_space}. For continuous observations use binning='spatial' or 'spatial_time' "
            "with a bin_size."
        )


def map_arrays(observations: Any, function: Callable[[np.ndarray], Any]) -> Any:
    """
    :return: ``function`` of the observations' array, or a dict of it per key for Dict observations
    """
    if isinstance(observations, dict):
        return {key: function(array) for key, array in observations.items()}
    return function(observations)


def flat_observations(observations: Any, n_samples: int) -> np.ndarray:
    """
    :param observations: observations with ``n_samples`` leading values (steps times envs, step-major)
    :return: one row per sample, shape (n_samples, obs_dim); a Dict's keys concatenated in order, as float64
    """
    if isinstance(observations, dict):
        return np.concatenate([obs.reshape(n_samples, -1) for obs in observations.values()], axis=1, dtype=np.float64)
    return observations.reshape(n_samples, -1)


def box_keys(observation_space: spaces.Space) -> list[str | None]:
    """
    :return: the keys of a Dict space's Box parts ([None] for a Box space itself): what the fitted baselines read
    """
    if isinstance(observation_space, spaces.Dict):
        return [key for key, space in observation_space.spaces.items() if isinstance(space, spaces.Box)]
    return [None] if isinstance(observation_space, spaces.Box) else []


def box_observations(observations: Any, observation_space: spaces.Space, n_samples: int) -> np.ndarray:
    """
    :param observations: observations with ``n_samples`` leading values, or a dict of such arrays
    :return: the Box observations (a Dict's Box parts, in the space's order), one row per sample, float64
    """
    if isinstance(observations, dict):
        observations = {key: observations[key] for key in box_keys(observation_space)}
    return flat_observations(observations, n_samples).astype(np.float64, copy=False)


def call_binning(binning: Callable, observations: Any, times: np.ndarray) -> np.ndarray:
    """
    :return: the callable's keys, checked: one integer per sample
    :raises ValueError: for keys of the wrong shape or dtype, with the shapes the callable was given
    """
    keys = np.asarray(binning(observations, times))
    if keys.shape != times.shape or not np.issubdtype(keys.dtype, np.integer):
        raise ValueError(
            f"The binning function {getattr(binning, '__name__', binning)} returned keys of shape {keys.shape} "
            f"and dtype {keys.dtype}; it must return one integer key per sample, shape (n_steps, n_envs) = "
            f"{times.shape}. It receives obs of shape {map_arrays(observations, np.shape)} and t of shape "
            f"{times.shape}."
        )
    return keys.astype(np.int64, copy=False)


def rollout_bin_keys(
    binning: Binning,
    observations: Any,
    times: np.ndarray,
    bin_size: np.ndarray,
    next_obs: Any = None,
    next_times: np.ndarray | None = None,
) -> np.ndarray:
    """
    :param binning: a binning name or a callable ``f(obs, t) -> keys``
    :param observations: the rollout's observations, (n_steps, n_envs, ...) or a dict of such arrays
    :param times: their episode times, shape (n_steps, n_envs)
    :param bin_size: epsilon of the spatial bins
    :param next_obs: the observations after the rollout (one row, as the buffer stores them), if any
    :param next_times: their episode times; given, the keys of the states after the rollout follow as one more
        row, computed with the rollout's (spatial and state keys are only comparable within one computation)
    :return: the bin key of every sample, shape (n_steps, n_envs), or (n_steps + 1, n_envs) with ``next_times``
    """
    with_next = next_times is not None
    n_steps, n_envs = times.shape
    if callable(binning):
        keys = call_binning(binning, observations, times)
        if next_times is not None:
            next_rows = map_arrays(next_obs, lambda rows: rows[None])
            keys = np.concatenate([keys, call_binning(binning, next_rows, next_times[None])])
        return keys
    n_rows = n_steps + with_next
    flat_obs = None
    if binning in OBSERVATION_BINNINGS:
        flat_obs = flat_observations(observations, n_steps * n_envs)
        if with_next:
            flat_obs = np.concatenate([flat_obs, flat_observations(next_obs, n_envs)])
    all_times = times if next_times is None else np.concatenate([times, next_times[None]])
    rollout_step = np.broadcast_to(np.arange(n_rows)[:, None], (n_rows, n_envs))
    return bin_keys(binning, flat_obs, all_times.reshape(-1), rollout_step.reshape(-1), bin_size).reshape(n_rows, n_envs)
