"""
The bin keys of a rollout's samples: observations as rollout buffers store them (arrays of shape
(n_steps, n_envs, ...), or a dict of such arrays for Dict spaces), flattened for the named binnings of ``binning.py``
or handed to a binning callable as they are.
"""

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sb3_gpg.estimator.binning import Binning, bin_keys

OBSERVATION_BINNINGS = ("spatial", "spatial_time", "state")


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


def box_observations(observations: Any, box_keys: Sequence[str | None], n_samples: int) -> np.ndarray:
    """
    :param observations: observations with ``n_samples`` leading values, or a dict of such arrays
    :param box_keys: for a dict, the keys of its Box parts, in the space's order
    :return: the Box observations, one row per sample (a view of a step-major array where it can be: the features
        convert it by blocks)
    """
    if isinstance(observations, dict):
        observations = {key: observations[key] for key in box_keys}
    return flat_observations(observations, n_samples)


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
