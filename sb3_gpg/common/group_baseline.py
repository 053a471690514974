"""
The group baseline of Group Policy Gradient (Algorithm 2 of the paper), vectorised.

Each trajectory adds only its first visit to a bin to that bin's mean; every sample's baseline is the mean of its bin.
Pure array code: samples are given flat, with each trajectory's samples in time order.
"""

from collections.abc import Iterable
from typing import NamedTuple

import numpy as np


class FirstVisitBins(NamedTuple):
    """
    :param bins: dense bin index of every sample, shape (n_samples,)
    :param counts: number of trajectories that visit each bin, shape (n_bins,)
    :param sums: sum of those trajectories' first-visit returns, per bin
    :param own_returns: for every sample, its own trajectory's first-visit return in its bin
    """

    bins: np.ndarray
    counts: np.ndarray
    sums: np.ndarray
    own_returns: np.ndarray


class GroupBaselines(NamedTuple):
    """
    :param baselines: baseline of every sample, shape (n_samples,), float64
    :param stats: diagnostics of the group, see ``group_baselines``
    """

    baselines: np.ndarray
    stats: dict[str, float]


def first_visit_bins(keys: np.ndarray, trajectory_ids: np.ndarray, returns: np.ndarray) -> FirstVisitBins:
    """
    :param keys: bin key of every sample (int64)
    :param trajectory_ids: trajectory of every sample (int64); each trajectory's samples in time order
    :param returns: discounted return of every sample (float64)
    """
    _, bins = np.unique(keys, return_inverse=True)
    n_bins = int(bins.max()) + 1
    visits = trajectory_ids * n_bins + bins
    # np.unique's return_index gives the first occurrence (it sorts stably), i.e. the trajectory's first visit to the bin
    _, first_index, visit_of_sample = np.unique(visits, return_index=True, return_inverse=True)
    first_bins = bins[first_index]
    first_returns = returns[first_index]
    counts = np.bincount(first_bins, minlength=n_bins)
    sums = np.bincount(first_bins, weights=first_returns, minlength=n_bins)
    return FirstVisitBins(bins, counts, sums, first_returns[visit_of_sample])


def group_baselines(
    level_keys: Iterable[np.ndarray],
    trajectory_ids: np.ndarray,
    returns: np.ndarray,
    leave_one_out: bool = False,
    min_bin_count: int = 1,
) -> GroupBaselines:
    """
    Baseline of every sample: the mean first-visit return of its bin.

    :param level_keys: bin keys of every sample, one array per binning level, finest first
        (the configured binning, then its coarser fallbacks); read lazily, so a generator computes a coarser level's
        keys only when some sample falls back to it
    :param trajectory_ids: trajectory of every sample; each trajectory's samples in time order
    :param returns: discounted return of every sample
    :param leave_one_out: leave the sample's own trajectory out of its baseline
    :param min_bin_count: a bin holding fewer returns (other trajectories' only, under ``leave_one_out``)
        gives its samples the baseline of the next level; where no level has enough, the baseline is the
        sample's own return, so its advantage is 0
    :return: the baselines and the group's diagnostics: ``n_bins`` (bins of the finest level), ``returns_per_bin``
        (mean first-visit returns per bin), ``own_trajectory_only_share`` (share of samples whose bin held only their
        own trajectory), ``fallback_share`` (share of samples whose baseline came from a coarser
        level or none) and ``no_baseline_share`` (share of samples left with advantage 0)
    """
    returns = returns.astype(np.float64, copy=False)
    n_samples = len(returns)
    baselines = returns.copy()
    if n_samples == 0:
        stats = dict.fromkeys(("n_bins", "returns_per_bin", "own_trajectory_only_share"), 0.0)
        return GroupBaselines(baselines, {**stats, "fallback_share": 0.0, "no_baseline_share": 0.0})

    unresolved = np.ones(n_samples, dtype=bool)
    stats: dict[str, float] = {}
    for level, keys in enumerate(level_keys):
        visits = first_visit_bins(keys, trajectory_ids, returns)
        count = visits.counts[visits.bins]
        total = visits.sums[visits.bins]
        if leave_one_out:
            count = count - 1
            total = total - visits.own_returns
        resolved_here = unresolved & (count >= min_bin_count)
        baselines[resolved_here] = total[resolved_here] / count[resolved_here]
        unresolved &= ~resolved_here
        if level == 0:
            stats = {
                "n_bins": float(len(visits.counts)),
                "returns_per_bin": float(visits.counts.mean()),
                "own_trajectory_only_share": float(np.mean(visits.counts[visits.bins] == 1)),
                "fallback_share": float(unresolved.mean()),
            }
        if not unresolved.any():
            break
    stats["no_baseline_share"] = float(unresolved.mean())
    return GroupBaselines(baselines, stats)
