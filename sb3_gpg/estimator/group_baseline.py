"""
The group baseline of Group Policy Gradient (Algorithm 2 of the paper), vectorised.

Each trajectory adds only its first visit to a bin to that bin's mean; every sample's baseline is the mean of its bin.
Pure array code: samples are given flat, with each trajectory's samples in time order.
"""

from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

# An advantage this small relative to its return counts as 0 in the diagnostics: a bin's mean of equal returns can
# differ from each of them by rounding
ZERO_ADVANTAGE_TOLERANCE = 1e-9


class FirstVisitBins(NamedTuple):
    """
    :param bins: dense bin index of every sample, shape (n_samples,)
    :param counts: number of trajectories that visit each bin, shape (n_bins,)
    :param sums: sum of those trajectories' first-visit returns, per bin
    :param own_returns: for every sample, its own trajectory's first-visit return in its bin
    :param first_bins: bin of every first visit
    :param first_returns: return of every first visit
    """

    bins: np.ndarray
    counts: np.ndarray
    sums: np.ndarray
    own_returns: np.ndarray
    first_bins: np.ndarray
    first_returns: np.ndarray


class GroupBaselines(NamedTuple):
    """
    :param baselines: baseline of every sample, shape (n_samples,), float64
    :param scales: what every sample's advantage is divided by (ones unless scaled by the bin's spread)
    :param stats: diagnostics of the group, see ``group_baselines``
    :param held_out: the leave-one-out baseline of every sample (``baselines`` itself under ``leave_one_out``), where
        asked for
    """

    baselines: np.ndarray
    scales: np.ndarray
    stats: dict[str, float]
    held_out: np.ndarray | None = None


def first_visit_bins(keys: np.ndarray, trajectory_ids: np.ndarray, returns: np.ndarray) -> FirstVisitBins:
    """
    :param keys: bin key of every sample (integers)
    :param trajectory_ids: trajectory of every sample, non-decreasing; each trajectory's samples in time order
    :param returns: discounted return of every sample (float64)
    """
    n_samples = len(keys)
    # One stable sort by key: each bin's samples stay in sample order, i.e. by trajectory and then by time, so a
    # trajectory's first visit to a bin is where the (bin, trajectory) pair changes along the sorted order
    order, sorted_keys = _stable_sort(keys)
    sorted_trajectories = trajectory_ids[order]
    new_bin = np.empty(n_samples, dtype=bool)
    new_bin[0] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=new_bin[1:])
    first_visit = new_bin.copy()
    first_visit[1:] |= sorted_trajectories[1:] != sorted_trajectories[:-1]
    sorted_bins = np.cumsum(new_bin) - 1
    first_bins = sorted_bins[first_visit]
    first_returns = returns[order][first_visit]
    n_bins = int(sorted_bins[-1]) + 1
    bins = np.empty(n_samples, dtype=np.int64)
    bins[order] = sorted_bins
    own_returns = np.empty(n_samples, dtype=np.float64)
    own_returns[order] = first_returns[np.cumsum(first_visit) - 1]
    counts = np.bincount(first_bins, minlength=n_bins)
    sums = np.bincount(first_bins, weights=first_returns, minlength=n_bins)
    return FirstVisitBins(bins, counts, sums, own_returns, first_bins, first_returns)


def _stable_sort(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """
    :return: the order of a stable sort of ``keys``, and the sorted keys (shifted by a constant, which keeps equality)
    """
    n_samples = len(keys)
    low = int(keys.min())
    index_bits = max(n_samples - 1, 1).bit_length()
    if int(keys.max()) - low >= 2 ** (63 - index_bits):
        # Too wide to share an integer with the sample index: number the distinct keys 0, 1, ... first
        keys = np.unique(keys, return_inverse=True)[1]
        low = 0
    # Key and sample index in one integer each: all distinct, so NumPy's fast (unstable) sort of values gives the
    # stable order, several times faster than a stable argsort
    packed = np.sort(((keys - low) << index_bits) | np.arange(n_samples))
    return packed & ((1 << index_bits) - 1), packed >> index_bits


def group_baselines(
    level_keys: Iterable[np.ndarray],
    trajectory_ids: np.ndarray,
    returns: np.ndarray,
    leave_one_out: bool = False,
    min_bin_count: int = 1,
    scale_by_bin_std: bool = False,
    held_out: bool = False,
) -> GroupBaselines:
    """
    Baseline of every sample: the mean first-visit return of its bin; optionally the spread of that bin too.

    :param level_keys: bin keys of every sample, one array per binning level, finest first
        (the configured binning, then its coarser fallbacks); read lazily, so a generator computes a coarser level's
        keys only when some sample falls back to it
    :param trajectory_ids: trajectory of every sample; each trajectory's samples in time order
    :param returns: discounted return of every sample
    :param leave_one_out: leave the sample's own trajectory out of its baseline
    :param min_bin_count: a bin holding fewer returns (other trajectories' only, under ``leave_one_out``)
        gives its samples the baseline of the next level; where no level has enough, the baseline is the
        sample's own return, so its advantage is 0
    :param scale_by_bin_std: also give every sample the standard deviation of the first-visit returns (all of them,
        its own included) of the bin its baseline came from; where that bin holds fewer than two returns or they are
        all equal, the next level's; where no level has a spread, 1
    :param held_out: also give every sample its baseline under ``leave_one_out`` (with the same ``min_bin_count`` and
        fallbacks), from the same bins: what ``group_baselines(..., leave_one_out=True)`` gives, in the same pass
    :return: the baselines, the scales (ones unless ``scale_by_bin_std``) and the group's diagnostics: ``n_bins``
        (bins of the finest level), ``returns_per_bin`` (mean first-visit returns per bin), ``own_trajectory_only_share``
        (share of samples whose bin held only their own trajectory), ``fallback_share`` (share of samples whose
        baseline came from a coarser level or none), ``no_baseline_share`` (share of samples left with advantage 0),
        ``own_baseline_share`` (share of samples whose baseline came from a bin holding their own trajectory alone);
        with ``scale_by_bin_std``, ``scale_mean`` (mean scale) and ``scale_fallback_share`` (share of samples whose
        scale came from a coarser level than their baseline, or is 1)
    """
    returns = returns.astype(np.float64, copy=False)
    n_samples = len(returns)
    baselines = returns.copy()
    scales = np.ones(n_samples, dtype=np.float64)
    if n_samples == 0:
        stats: dict[str, float] = dict.fromkeys(("n_bins", "returns_per_bin", "own_trajectory_only_share"), 0.0)
        no_samples = {"fallback_share": 0.0, "no_baseline_share": 0.0, "own_baseline_share": 0.0}
        return GroupBaselines(baselines, scales, {**stats, **no_samples}, baselines if held_out else None)

    unresolved = np.ones(n_samples, dtype=bool)
    # The leave-one-out baselines besides (the baselines themselves under leave_one_out), and the samples still without
    held_out_baselines = returns.copy() if held_out and not leave_one_out else None
    held_out_unresolved = np.ones(n_samples, dtype=bool) if held_out_baselines is not None else np.zeros(0, dtype=bool)
    own_baseline = 0
    # Samples with a baseline whose scale is still to find (at the baseline's level or a coarser one)
    unscaled = np.zeros(n_samples, dtype=bool)
    scale_fell_back = np.zeros(n_samples, dtype=bool)
    stats = {}
    for level, keys in enumerate(level_keys):
        visits = first_visit_bins(keys, trajectory_ids, returns)
        count = visits.counts[visits.bins]
        total = visits.sums[visits.bins]
        if leave_one_out:
            count = count - 1
            total = total - visits.own_returns
        resolved_here = unresolved & (count >= min_bin_count)
        baselines[resolved_here] = total[resolved_here] / count[resolved_here]
        # A baseline from a bin that holds the sample's own trajectory alone is that trajectory's return
        own_baseline += np.count_nonzero(resolved_here & (visits.counts[visits.bins] == 1))
        unresolved &= ~resolved_here
        if held_out_baselines is not None:
            others = visits.counts[visits.bins] - 1
            held_out_here = held_out_unresolved & (others >= min_bin_count)
            others_total = visits.sums[visits.bins] - visits.own_returns
            held_out_baselines[held_out_here] = others_total[held_out_here] / others[held_out_here]
            held_out_unresolved &= ~held_out_here
        if scale_by_bin_std:
            scale_fell_back |= unscaled
            unscaled |= resolved_here
            spread = bin_std(visits)[visits.bins]
            scaled_here = unscaled & (visits.counts[visits.bins] >= 2) & (spread > 0)
            scales[scaled_here] = spread[scaled_here]
            unscaled &= ~scaled_here
        if level == 0:
            stats = {
                "n_bins": float(len(visits.counts)),
                "returns_per_bin": float(visits.counts.mean()),
                "own_trajectory_only_share": float(np.mean(visits.counts[visits.bins] == 1)),
                "fallback_share": float(unresolved.mean()),
            }
        if not (unresolved.any() or unscaled.any() or held_out_unresolved.any()):
            break
    stats["no_baseline_share"] = float(unresolved.mean())
    stats["own_baseline_share"] = own_baseline / n_samples
    if scale_by_bin_std:
        stats["scale_mean"] = float(scales.mean())
        stats["scale_fallback_share"] = float(np.mean(scale_fell_back | unscaled | unresolved))
    if held_out and leave_one_out:
        held_out_baselines = baselines
    return GroupBaselines(baselines, scales, stats, held_out_baselines)


def bin_std(visits: FirstVisitBins) -> np.ndarray:
    """
    :return: standard deviation (ddof 0) of each bin's first-visit returns, shape (n_bins,)
    """
    means = visits.sums / visits.counts
    squares = np.bincount(visits.first_bins, weights=(visits.first_returns - means[visits.first_bins]) ** 2)
    return np.sqrt(squares / visits.counts)


def group_bootstrap(
    level_keys: Iterable[tuple[np.ndarray, np.ndarray]],
    trajectory_ids: np.ndarray,
    returns: np.ndarray,
    min_bin_count: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """
    The group's estimate of the return from given states on: for every query, the mean first-visit return of the
    bin the query falls into, among the given samples (those whose returns are complete).

    :param level_keys: per binning level, finest first, the bin keys of the samples and those of the queries
        (keys of one level must be comparable: computed together); read lazily, as in ``group_baselines``
    :param trajectory_ids: trajectory of every sample; each trajectory's samples in time order
    :param returns: discounted return of every sample
    :param min_bin_count: a bin holding fewer returns sends the query to the next level
    :return: the value of every query (0 where no level's bin holds ``min_bin_count`` returns) and whether it has one
    """
    values, found = None, None
    for keys, query_keys in level_keys:
        if values is None or found is None:  # both or neither: set together
            values, found = np.zeros(len(query_keys)), np.zeros(len(query_keys), dtype=bool)
        if len(keys) == 0:
            break
        visits = first_visit_bins(keys, trajectory_ids, returns)
        bin_keys = np.empty(len(visits.counts), dtype=np.int64)
        bin_keys[visits.bins] = keys  # bins are numbered in the order of their keys
        index = np.minimum(np.searchsorted(bin_keys, query_keys), len(bin_keys) - 1)
        count = np.where(bin_keys[index] == query_keys, visits.counts[index], 0)
        resolved_here = ~found & (count >= min_bin_count)
        values[resolved_here] = visits.sums[index[resolved_here]] / count[resolved_here]
        found |= resolved_here
        if found.all():
            break
    assert values is not None and found is not None, "level_keys gave no level"
    return values, found


def advantage_stats(trajectory_ids: np.ndarray, returns: np.ndarray, baselines: np.ndarray) -> dict[str, float]:
    """
    :param trajectory_ids: trajectory of every sample of the group, non-decreasing
    :param returns: return of every sample of the group
    :param baselines: their baselines (``group_baselines``)
    :return: ``zero_advantage_share``, the share of samples the group leaves at advantage 0 for any reason (no
        baseline, a bin of their own trajectory alone, or a bin whose returns are all equal: a constant reward per step
        and episodes that all outlast the rollout), and ``n_trajectories``, the number of trajectories in the group
    """
    flat = np.abs(returns - baselines) <= ZERO_ADVANTAGE_TOLERANCE * np.maximum(1.0, np.abs(returns))
    n_trajectories = np.count_nonzero(np.diff(trajectory_ids)) + 1 if len(baselines) else 0
    return {
        "zero_advantage_share": float(flat.mean()) if len(flat) else 0.0,
        "n_trajectories": float(n_trajectories),
    }
