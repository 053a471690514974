"""
Binning functions of Group Policy Gradient: which samples of a group share a baseline.

Pure array code on one group's samples: every function takes numpy arrays with one row per sample and returns
one int64 bin key per sample (equal keys, same bin). Nothing here knows of Stable-Baselines3.
"""

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

BINNINGS = ("time", "rollout_step", "universal", "spatial", "spatial_time", "state")
# Where a bin holds fewer than ``min_bin_count`` returns, its samples take the baseline of the next coarser binning.
COARSER_BINNING = {
    "spatial_time": "time",
    "time": "universal",
    "spatial": "universal",
    "state": "universal",
    "rollout_step": "universal",
}

# f(obs, t) -> keys: obs and t batched as in the rollout buffer, shape (n_steps, n_envs, ...); one integer key per sample
BinningFn = Callable[[Any, np.ndarray], np.ndarray]
Binning = str | BinningFn


def check_binning(binning: Binning) -> None:
    """
    :param binning: a name from ``BINNINGS`` or a callable ``f(obs, t) -> keys``
    :raises ValueError: for an unknown name
    """
    if callable(binning):
        return
    if binning not in BINNINGS:
        raise ValueError(
            f"Unknown binning {binning!r}: choose one of {', '.join(BINNINGS)}, "
            "or pass a callable f(obs, t) -> int64 keys (one per sample)."
        )


def check_bin_size(bin_size: float | Sequence[float] | np.ndarray, obs_dim: int | None = None) -> np.ndarray:
    """
    :param bin_size: epsilon of the spatial bins, one float or one value per flattened observation dimension
    :param obs_dim: number of flattened observation dimensions, to check a per-dimension ``bin_size`` against
    :return: ``bin_size`` as a float64 array (0-d or 1-d)
    :raises ValueError: for a non-positive, non-finite or wrongly sized ``bin_size``
    """
    try:
        size = np.asarray(bin_size, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"bin_size must be a positive float or a list of them, got {bin_size!r}.") from None
    if size.ndim > 1 or size.size == 0:
        raise ValueError(f"bin_size must be a positive float or a flat list of them, got shape {size.shape}.")
    if not (np.isfinite(size).all() and (size > 0).all()):
        raise ValueError(f"bin_size must be positive and finite, got {bin_size!r}.")
    if size.ndim == 1 and obs_dim is not None and size.size != obs_dim:
        raise ValueError(
            f"bin_size has {size.size} values but the flattened observation has {obs_dim} dimensions: "
            "give one value per dimension, or a single float for all of them."
        )
    return size


def check_binning_arguments(
    binning: Binning, bin_size: float | Sequence[float] | np.ndarray, min_bin_count: int, obs_dim: int | None = None
) -> np.ndarray:
    """
    Check the options that say which samples share a baseline (see ``GroupOptions`` for their meaning).

    :return: ``bin_size`` as a float64 array
    :raises ValueError: naming the argument that is wrong and what it accepts
    """
    check_binning(binning)
    if isinstance(min_bin_count, bool) or not isinstance(min_bin_count, (int, np.integer)) or min_bin_count < 1:
        raise ValueError(f"min_bin_count must be an integer >= 1, got {min_bin_count!r}.")
    return check_bin_size(bin_size, obs_dim)


def binning_levels(binning: Binning) -> list[Binning]:
    """
    :param binning: the configured binning
    :return: the binning followed by its fallbacks, finest first, ending at ``"universal"``
        (e.g. spatial_time -> time -> universal; a callable falls back to universal)
    """
    levels = [binning]
    while levels[-1] != "universal":
        levels.append("universal" if callable(levels[-1]) else COARSER_BINNING[levels[-1]])
    return levels


def columns_to_keys(columns: np.ndarray, integral: bool = False) -> np.ndarray:
    """
    :param columns: array of shape (n_columns, n_samples): one row per variable, one column per sample
    :param integral: the caller knows every value is an integer (spatial cells, discrete states, episode times)
    :return: one int64 key per sample; samples with equal values get equal keys, different values different keys
    """
    n_samples = columns.shape[1]
    if n_samples == 0:
        return np.zeros(0, dtype=np.int64)
    columns = np.ascontiguousarray(columns, dtype=np.float64)  # reductions along contiguous memory are much faster
    low, high = columns.min(axis=1), columns.max(axis=1)
    # Integer-valued columns whose ranges fit in an int64 become one mixed-radix number per sample: no sort needed
    if np.isfinite(high - low).all():
        radices = [int(span) + 1 for span in high - low]
        # Below 2**53 every partial sum is exact in float64, so one matrix product does the packing
        if math.prod(radices) < 2**53 and (integral or np.array_equal(columns, np.floor(columns))):
            multipliers = np.cumprod([1, *radices[:-1]], dtype=np.float64)
            return (multipliers @ (columns - low[:, None])).astype(np.int64)
    # Otherwise sort the samples lexicographically, then number the runs of equal values
    order = np.lexsort(columns[::-1])
    sorted_columns = columns[:, order]
    new_run = np.empty(n_samples, dtype=bool)
    new_run[0] = True
    np.any(sorted_columns[:, 1:] != sorted_columns[:, :-1], axis=0, out=new_run[1:])
    keys = np.empty(n_samples, dtype=np.int64)
    keys[order] = np.cumsum(new_run) - 1
    return keys


def spatial_cells(flat_obs: np.ndarray, bin_size: np.ndarray) -> np.ndarray:
    """
    :param flat_obs: observations, shape (n_samples, obs_dim)
    :param bin_size: epsilon, a scalar or one value per dimension
    :return: Round(obs / epsilon) as float64, one row per dimension: shape (obs_dim, n_samples)
    """
    # Written straight into the (obs_dim, n_samples) layout that columns_to_keys reads, sparing a transposition
    cells = np.empty(flat_obs.shape[::-1], dtype=np.float64)
    np.divide(flat_obs.T, np.reshape(bin_size, (-1, 1)), out=cells)
    return np.round(cells, out=cells)


def bin_keys(
    binning: str,
    flat_obs: np.ndarray | None,
    episode_time: np.ndarray,
    rollout_step: np.ndarray,
    bin_size: np.ndarray,
) -> np.ndarray:
    """
    The bin key of every sample under a named binning.

    :param binning: a name from ``BINNINGS``
    :param flat_obs: flattened observations of any numeric dtype, shape (n_samples, obs_dim); only read by spatial,
        spatial_time and state (integer-valued for state: the buffer refuses state binning on continuous spaces)
    :param episode_time: time since the start of the sample's episode, shape (n_samples,)
    :param rollout_step: row of the sample in the rollout, shape (n_samples,)
    :param bin_size: epsilon of the spatial bins (see ``check_bin_size``)
    :return: int64 keys, shape (n_samples,)
    """
    if binning == "universal":
        return np.zeros(len(episode_time), dtype=np.int64)
    if binning == "time":
        return episode_time.astype(np.int64, copy=False)
    if binning == "rollout_step":
        return rollout_step.astype(np.int64, copy=False)
    assert flat_obs is not None, f"{binning} binning needs the observations"
    if binning == "state":
        return columns_to_keys(flat_obs.T, integral=True)
    cell_keys = columns_to_keys(spatial_cells(flat_obs, bin_size), integral=True)
    if binning == "spatial":
        return cell_keys
    if binning == "spatial_time":
        return columns_to_keys(np.stack([cell_keys, episode_time]), integral=True)
    raise ValueError(f"Unknown binning {binning!r}")
