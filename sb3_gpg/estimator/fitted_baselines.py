"""
State-aware group baselines, still without a critic: per rollout, a baseline fitted to the group's own returns on
features of the observation and the episode time, cross-fitted so that no trajectory's returns enter its own baseline.

``"linear"``: ridge regression on clipped observations, their squares and a cubic in the episode time, with a constant
(the features of rllab's LinearFeatureBaseline). ``"knn"``: the mean return of the k nearest samples of other
trajectories in standardised (observation, episode time), searched among at most ``max_samples`` of them. The
linear baseline can also remember earlier rollouts (``memory``, ``recency``: ``baseline_memory``) and add random
Fourier features of the observation (``fourier``), which the larger fit of a memory affords.

Array code on one group's samples, one row per sample; nothing here knows of Stable-Baselines3. NumPy, but for the
knn's neighbour search: torch's matrix product and top-k, faster than a k-d tree in as many dimensions.
"""

import math
import numbers
from typing import Any

import numpy as np
import torch as th

from sb3_gpg.estimator.baseline_memory import NormalEquations
from sb3_gpg.estimator.values import check_real

FITTED_BASELINES = ("linear", "knn")
BASELINES = ("bins", *FITTED_BASELINES)
# Defaults of each fitted baseline's arguments (``baseline_kwargs``)
BASELINE_KWARGS: dict[str, dict[str, Any]] = {
    "bins": {},
    "linear": {
        "n_folds": 2,
        "ridge": 1e-5,
        "memory": 0,
        "recency": 1.0,
        "fourier": 0,
        "fourier_scale": None,
        "fourier_seed": 0,
    },
    "knn": {"n_folds": 2, "n_neighbors": 16, "max_samples": 1024},
}
# Observations are clipped to this range before the linear features, as rllab's LinearFeatureBaseline does
OBS_CLIP = 10.0
# Queries per block of the brute-force nearest neighbours, to bound the distance matrix's memory
KNN_BLOCK = 2048
# Episode times are divided by this before the linear features, to keep their cubic of the order of one
TIME_SCALE = 100.0


def check_baseline(baseline: str, baseline_kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """
    :param baseline: ``"bins"``, ``"linear"`` or ``"knn"``
    :param baseline_kwargs: the fitted baseline's arguments, overriding ``BASELINE_KWARGS``
    :return: the baseline's arguments, defaults filled in
    :raises ValueError: for an unknown baseline, argument or value, naming what is accepted
    """
    if baseline not in BASELINES:
        raise ValueError(f"baseline must be one of {BASELINES}, got {baseline!r}.")
    if baseline_kwargs is not None and not isinstance(baseline_kwargs, dict):
        raise ValueError(f"baseline_kwargs must be a dict of the baseline's arguments, got {baseline_kwargs!r}.")
    given = dict(baseline_kwargs or {})
    unknown = sorted(set(given) - set(BASELINE_KWARGS[baseline]))
    if unknown:
        accepted = ", ".join(BASELINE_KWARGS[baseline]) or "none"
        raise ValueError(f"baseline_kwargs {unknown} are not arguments of baseline={baseline!r} (it takes: {accepted}).")
    kwargs = {**BASELINE_KWARGS[baseline], **given}
    for name in ("n_folds", "n_neighbors", "max_samples", "memory", "fourier", "fourier_seed"):
        if name in kwargs:
            if isinstance(kwargs[name], bool) or not isinstance(kwargs[name], numbers.Integral):
                raise ValueError(f"baseline_kwargs['{name}'] must be an integer, got {kwargs[name]!r}.")
            kwargs[name] = int(kwargs[name])  # NumPy's integers too: the memory's deque takes Python's
    for name in ("ridge", "recency", "fourier_scale"):
        if kwargs.get(name) is not None:
            check_real(f"baseline_kwargs['{name}']", kwargs[name])
    _check_ranges(kwargs)
    # Arguments of a part that is off would be ignored without a word (their defaults, written out, change nothing)
    for name, part in (("recency", "memory"), ("fourier_scale", "fourier"), ("fourier_seed", "fourier")):
        if name in given and kwargs[part] == 0 and kwargs[name] != BASELINE_KWARGS[baseline][name]:
            raise ValueError(
                f"baseline_kwargs['{name}'] is an argument of the {part} (baseline_kwargs['{part}']), which is 0 (off): "
                f"set {part} to turn it on, or drop {name}."
            )
    return kwargs


def _check_ranges(kwargs: dict[str, Any]) -> None:
    """
    :param kwargs: a fitted baseline's arguments, numbers of the right types
    :raises ValueError: for a value out of its range, naming the range
    """
    if kwargs.get("n_folds", 2) < 2:
        raise ValueError(f"baseline_kwargs['n_folds'] must be at least 2 (cross-fitting), got {kwargs['n_folds']}.")
    for name in ("n_neighbors", "max_samples"):
        if kwargs.get(name, 1) < 1:
            raise ValueError(f"baseline_kwargs['{name}'] must be at least 1, got {kwargs[name]}.")
    if not 0 < kwargs.get("ridge", 1.0) < math.inf:  # NaN too
        raise ValueError(f"baseline_kwargs['ridge'] must be positive and finite, got {kwargs['ridge']}.")
    if kwargs.get("memory", 0) < 0:
        raise ValueError(f"baseline_kwargs['memory'] must be at least 0 (rollouts remembered), got {kwargs['memory']}.")
    if not 0 < kwargs.get("recency", 1.0) <= 1:
        raise ValueError(f"baseline_kwargs['recency'] must be in (0, 1], got {kwargs['recency']}.")
    for name in ("fourier", "fourier_seed"):
        if kwargs.get(name, 0) < 0:
            raise ValueError(f"baseline_kwargs['{name}'] must be at least 0, got {kwargs[name]}.")
    if kwargs.get("fourier_scale") is not None and not 0 < kwargs["fourier_scale"] < math.inf:
        raise ValueError(
            f"baseline_kwargs['fourier_scale'] must be positive and finite (or None), got {kwargs['fourier_scale']}."
        )


def linear_features(
    flat_obs: np.ndarray, times: np.ndarray, fourier: int = 0, fourier_scale: float | None = None, fourier_seed: int = 0
) -> np.ndarray:
    """
    :param flat_obs: observations, shape (n_samples, obs_dim)
    :param times: episode times, shape (n_samples,)
    :param fourier: random Fourier features of the clipped observation added: ``sqrt(2 / fourier) * cos(obs W + b)``,
        with ``W`` normal of standard deviation ``1 / fourier_scale`` (an RBF kernel of that length scale) and ``b``
        uniform in [0, 2 pi), both drawn from ``fourier_seed`` alone, so that every rollout gets the same features
    :param fourier_scale: their length scale; None: ``sqrt(obs_dim)``, the typical norm of an observation normalised to
        unit variance (VecNormalize's), so of the order of the distance between two (``sqrt(2 * obs_dim)``); without
        normalisation, give one in the observation's own units
    :return: [clip(obs), clip(obs)**2, t, t**2, t**3, 1, the Fourier features] with t the scaled episode time, float64
    """
    obs = np.clip(flat_obs.astype(np.float64), -OBS_CLIP, OBS_CLIP)
    t = (times.astype(np.float64) / TIME_SCALE)[:, None]
    columns = [obs, obs**2, t, t**2, t**3, np.ones_like(t)]
    if fourier:
        rng = np.random.default_rng(fourier_seed)
        scale = np.sqrt(obs.shape[1]) if fourier_scale is None else fourier_scale
        weights = rng.normal(0.0, 1.0 / scale, size=(obs.shape[1], fourier))
        phases = rng.uniform(0.0, 2 * np.pi, size=fourier)
        columns.append(np.sqrt(2.0 / fourier) * np.cos(obs @ weights + phases))
    return np.concatenate(columns, axis=1)


def knn_features(flat_obs: np.ndarray, times: np.ndarray) -> np.ndarray:
    """
    :return: observations and episode time side by side, float64 (standardised by ``standardise``)
    """
    return np.concatenate([flat_obs.astype(np.float64), times.astype(np.float64)[:, None]], axis=1)


def standardise(features: np.ndarray, *others: np.ndarray) -> list[np.ndarray]:
    """
    :return: ``features`` and each of ``others`` standardised with the mean and std of ``features`` (constant columns
        are centred only)
    """
    mean, std = features.mean(axis=0), features.std(axis=0)
    std[std == 0] = 1.0
    return [(array - mean) / std for array in (features, *others)]


def _ridge_solve(gram: np.ndarray, moments: np.ndarray, ridge: float) -> np.ndarray:
    return np.linalg.solve(gram + ridge * np.eye(len(gram)), moments)


def _fitted(fit: NormalEquations | None, prior: NormalEquations | None, queries: np.ndarray, ridge: float) -> np.ndarray:
    """
    :param fit: the normal equations of the samples fitted on, with or without the memory's (``prior``) added; None
        where no sample is given, the memory alone is fitted on
    :return: the ridge fit's value of each query, clipped to the range of the returns it was fitted on: its cubic in
        the episode time, fitted on some times only, would otherwise extrapolate to any value at the others
    """
    if prior is not None:
        fit = prior if fit is None else fit.plus(prior)
    assert fit is not None, "a fit needs samples or a memory"
    return np.clip(queries @ _ridge_solve(fit.gram, fit.moments, ridge), fit.low, fit.high)


def _knn_mean(train: np.ndarray, targets: np.ndarray, queries: np.ndarray, n_neighbors: int, max_samples: int) -> np.ndarray:
    """
    :param max_samples: the training rows searched: every ``ceil(n / max_samples)``-th when there are more (a
        trajectory's consecutive samples are close, so a stride keeps its coverage)
    :return: the mean target of each query's ``n_neighbors`` nearest rows among those searched (Euclidean)
    """
    stride = -(-len(train) // max_samples)
    train, targets = train[::stride], targets[::stride]
    # Brute force in blocks of queries: exact, and a matrix product with torch's top-k is faster than a k-d tree in
    # as many dimensions as an observation has
    k = min(n_neighbors, len(train))
    # Single precision: the distances only rank the neighbours
    train_t, queries_t = th.as_tensor(train, dtype=th.float32), th.as_tensor(queries, dtype=th.float32)
    norms = (train_t * train_t).sum(dim=1)
    means = np.empty(len(queries), dtype=np.float64)
    for start in range(0, len(queries), KNN_BLOCK):
        block = queries_t[start : start + KNN_BLOCK]
        distances = norms[None, :] - 2.0 * block @ train_t.T  # squared distance less the query's own norm
        index = th.topk(distances, k, dim=1, largest=False).indices.numpy()
        means[start : start + KNN_BLOCK] = targets[index].mean(axis=1)
    return means


def cross_fitted_baselines(
    baseline: str,
    features: np.ndarray,
    returns: np.ndarray,
    folds: np.ndarray,
    prior: NormalEquations | None = None,
    **kwargs: Any,
) -> np.ndarray:
    """
    Every sample's baseline from a fit on the samples of the other folds (and, for the linear baseline, on the earlier
    rollouts of its memory).

    :param baseline: ``"linear"`` or ``"knn"``
    :param features: ``linear_features``, or standardised ``knn_features``, one row per sample
    :param returns: the return of every sample
    :param folds: the fold of every sample (all of a trajectory's samples in one fold), 0 .. n_folds - 1, each used
    :param prior: the linear baseline's remembered rollouts (``baseline_memory.remembered``), added to every fold's fit
    :param kwargs: the baseline's arguments (``ridge``; ``n_neighbors``, ``max_samples``)
    :return: the baseline of every sample, float64
    """
    n_folds = int(folds.max()) + 1
    baselines = np.empty(len(returns), dtype=np.float64)
    if baseline == "linear":
        # Each fold's normal equations once; a fit on the other folds is the total less the fold's own
        grams = [features[folds == fold].T @ features[folds == fold] for fold in range(n_folds)]
        moments = [features[folds == fold].T @ returns[folds == fold] for fold in range(n_folds)]
        gram, moment = sum(grams), sum(moments)
        for fold in range(n_folds):
            others = returns[folds != fold]
            fit = NormalEquations(gram - grams[fold], moment - moments[fold], float(others.min()), float(others.max()))
            baselines[folds == fold] = _fitted(fit, prior, features[folds == fold], kwargs["ridge"])
        return baselines
    for fold in range(n_folds):
        own = folds == fold
        baselines[own] = _knn_mean(features[~own], returns[~own], features[own], kwargs["n_neighbors"], kwargs["max_samples"])
    return baselines


def fitted_values(
    baseline: str,
    features: np.ndarray,
    returns: np.ndarray,
    query_features: np.ndarray,
    prior: NormalEquations | None = None,
    **kwargs: Any,
) -> np.ndarray:
    """
    :param prior: the linear baseline's remembered rollouts, added to the fit; with no sample given, the fit's only data
    :return: the value of each query from a fit on all the given samples (no cross-fitting: the queries' own returns
        are not among them), e.g. of the states after the rollout from the complete returns
    """
    if baseline == "linear":
        fit = NormalEquations.of(features, returns) if len(returns) else None
        return _fitted(fit, prior, query_features, kwargs["ridge"])
    return _knn_mean(features, returns, query_features, kwargs["n_neighbors"], kwargs["max_samples"])


def trajectory_folds(trajectory_ids: np.ndarray, n_folds: int, rows: np.ndarray | None = None) -> np.ndarray | None:
    """
    :param trajectory_ids: trajectory of every sample, numbered 0, 1, ... in order of first appearance
    :param n_folds: the number of folds wanted
    :param rows: the rollout row of every sample; given, the trajectories are dealt in the order they start (by the
        row of their first sample, then by id), so that every fold holds trajectories of every part of the rollout:
        dealt env by env, envs stepping together would put every trajectory before their episodes' end in one fold and
        every one after it in the other, each fitted on episode times the other never reaches
    :return: the fold of every sample, trajectories dealt to folds in turn; None when the group holds a single
        trajectory (nothing to cross-fit from)
    """
    _, first, dense = np.unique(trajectory_ids, return_index=True, return_inverse=True)
    n_trajectories = int(dense.max()) + 1 if len(dense) else 0
    if n_trajectories < 2:
        return None
    if rows is not None:
        dense = np.argsort(np.argsort(rows[first], kind="stable"), kind="stable")[dense]
    return dense % min(n_folds, n_trajectories)
