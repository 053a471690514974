"""
State-aware group baselines, still without a critic: per rollout, a baseline fitted to the group's own returns on
features of the observation and the episode time, cross-fitted (``cross_fitting``) so that no trajectory's returns
enter its own baseline. Their arguments, features and neighbour search are here.

``"linear"``: ridge regression on a cubic in the episode time, a constant, the clipped observation and its squares
(the features of rllab's LinearFeatureBaseline; a random projection of the observation where it has many
dimensions) and random Fourier features of it, fitted together with the last rollouts (``memory``, ``recency``,
``memory_weight``, ``level``: ``baseline_memory``; ``pooled_memory``, ``pooled_recency``, ``pooled_choice``: a second
candidate per fold, ``cross_fitting``) on the returns, or on its own lambda-returns (``target``:
``lambda_targets``). ``"knn"``: the mean return of the k nearest samples of other trajectories in standardised
(observation, episode time), searched among at most ``max_samples`` of them.

Array code on one group's samples, one row per sample; nothing here knows of Stable-Baselines3. NumPy, but for the
knn's neighbour search: torch's matrix product and top-k, faster than a k-d tree in as many dimensions.
"""

import functools
import math
import numbers
from typing import Any

import numpy as np
import torch as th

from sb3_gpg.estimator.baseline_memory import LEVELS
from sb3_gpg.estimator.lambda_targets import TARGETS
from sb3_gpg.estimator.values import check_real

FITTED_BASELINES = ("linear", "knn")
# How a fold of the linear baseline chooses between its candidates (``pooled_memory``; ``cross_fitting``)
POOLED_CHOICES = ("halves", "previous")
BASELINES = ("bins", *FITTED_BASELINES)
# The linear baseline's arguments that name a choice: the choices, and what each means
CHOICES = {
    "level": (
        LEVELS,
        "'own' gives each remembered rollout a level of its own, 'trend' puts the rollouts' levels on a line in their "
        "age, 'pooled' shares one.",
    ),
    "pooled_choice": (
        POOLED_CHOICES,
        "'halves' lets each fold choose on held-out halves of its training trajectories, 'previous' gives every fold "
        "the candidate whose folds predicted the previous rollout's returns best.",
    ),
    "target": (
        TARGETS,
        "'returns' fits the Monte-Carlo returns, 'lambda_returns' the baseline's own lambda-returns (GAE's lambda), as "
        "PPO's critic, 'auto' the lambda-returns where gae_lambda is below 1.",
    ),
}
# Defaults of each fitted baseline's arguments (``baseline_kwargs``)
BASELINE_KWARGS: dict[str, dict[str, Any]] = {
    "bins": {},
    "linear": {
        "n_folds": 2,
        "ridge": 1e-3,
        "memory": 8,
        "recency": 0.8,
        "memory_weight": 1.0,
        "level": "own",
        "pooled_memory": 0,
        "pooled_recency": 0.9,
        "pooled_choice": "halves",
        "fourier": 256,
        "fourier_scale": None,
        "fourier_seed": None,
        "choose_size": True,
        "optimism": True,
        "target": "auto",
    },
    "knn": {"n_folds": 2, "n_neighbors": 16, "max_samples": 1024},
}
# Observations are clipped to this range before the linear features, as rllab's LinearFeatureBaseline does
OBS_CLIP = 10.0
# Queries per block of the brute-force nearest neighbours, to bound the distance matrix's memory
KNN_BLOCK = 2048
# Episode times are divided by this before the linear features, to keep their cubic of the order of one
TIME_SCALE = 100.0
# The linear features' first columns: the constant and the cubic in the episode time
BASE_COLUMNS = 4
# Observations of more dimensions are projected on this many before the linear features
MAX_OBS_FEATURES = 64
# Rows per block of the linear features
FEATURE_BLOCK = 512


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
    for name in ("n_folds", "n_neighbors", "max_samples", "memory", "pooled_memory", "fourier", "fourier_seed"):
        if name in kwargs and not (name == "fourier_seed" and kwargs[name] is None):
            if isinstance(kwargs[name], bool) or not isinstance(kwargs[name], numbers.Integral):
                raise ValueError(f"baseline_kwargs['{name}'] must be an integer, got {kwargs[name]!r}.")
            kwargs[name] = int(kwargs[name])  # NumPy's integers too: the memory's deque takes Python's
    for name in ("ridge", "recency", "pooled_recency", "memory_weight", "fourier_scale"):
        if kwargs.get(name) is not None:
            check_real(f"baseline_kwargs['{name}']", kwargs[name])
            kwargs[name] = float(kwargs[name])  # NumPy's floats too: a float32 would round the weights it scales
    for name in ("choose_size", "optimism"):
        if not isinstance(kwargs.get(name, True), bool):
            raise ValueError(f"baseline_kwargs['{name}'] must be True or False, got {kwargs[name]!r}.")
    for name, (allowed, meaning) in CHOICES.items():
        if name in kwargs and kwargs[name] not in allowed:
            raise ValueError(f"baseline_kwargs['{name}'] must be one of {allowed}, got {kwargs[name]!r}: {meaning}")
    _check_ranges(kwargs)
    # Arguments of a part that is off would be ignored without a word (their defaults, written out, change nothing)
    # (fourier_seed also draws the projection of large observations: taken whatever fourier is)
    parts = {
        "recency": "memory",
        "memory_weight": "memory",
        "level": "memory",
        "pooled_recency": "pooled_memory",
        "pooled_choice": "pooled_memory",
        "fourier_scale": "fourier",
    }
    for name, part in parts.items():
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
    for name in ("memory", "pooled_memory"):
        if kwargs.get(name, 0) < 0:
            raise ValueError(f"baseline_kwargs['{name}'] must be at least 0 (rollouts remembered), got {kwargs[name]}.")
    for name in ("recency", "pooled_recency"):
        if not 0 < kwargs.get(name, 1.0) <= 1:
            raise ValueError(f"baseline_kwargs['{name}'] must be in (0, 1], got {kwargs[name]}.")
    if kwargs.get("memory_weight") is not None and not 0 < kwargs["memory_weight"] <= math.inf:  # NaN too
        raise ValueError(
            f"baseline_kwargs['memory_weight'] must be positive (or None: no cap), got {kwargs['memory_weight']}."
        )
    for name in ("fourier", "fourier_seed"):
        if (kwargs.get(name) or 0) < 0:
            raise ValueError(f"baseline_kwargs['{name}'] must be at least 0, got {kwargs[name]}.")
    if kwargs.get("pooled_memory", 0) and not kwargs.get("memory", 0):
        raise ValueError(
            f"baseline_kwargs['pooled_memory'] ({kwargs['pooled_memory']}) is a second candidate beside the memory, "
            "which is 0 (off): set memory to at least 1 (its default is 8), or drop pooled_memory."
        )
    if kwargs.get("fourier_scale") is not None and not 0 < kwargs["fourier_scale"] < math.inf:
        raise ValueError(
            f"baseline_kwargs['fourier_scale'] must be positive and finite (or None), got {kwargs['fourier_scale']}."
        )


def remembered_rollouts(baseline_kwargs: dict[str, Any] | None) -> int:
    """:return: the rollouts a linear baseline's memory holds: as many as its fit or its pooled candidate reads"""
    kwargs = baseline_kwargs or {}
    return max(kwargs.get("memory", 0), kwargs.get("pooled_memory", 0))


def linear_features(
    flat_obs: np.ndarray,
    times: np.ndarray,
    fourier: int = 0,
    fourier_scale: float | None = None,
    fourier_seed: int | None = None,
    order: np.ndarray | None = None,
) -> np.ndarray:
    """
    :param flat_obs: observations, shape (n_samples, obs_dim)
    :param times: episode times, shape (n_samples,)
    :param fourier: random Fourier features of the clipped observation added: ``sqrt(2 / fourier) * cos(z W + b)``,
        with ``z`` the observation's values (below), ``W`` normal of standard deviation ``1 / fourier_scale`` (an RBF
        kernel of that length scale) and ``b`` uniform in [0, 2 pi)
    :param fourier_scale: their length scale; None: ``sqrt(obs_dim)``, the typical norm of an observation normalised to
        unit variance (VecNormalize's), so of the order of the distance between two (``sqrt(2 * obs_dim)``); without
        normalisation, give one in the observation's own units
    :param fourier_seed: the seed of the random draws (``random_maps``), the same for every rollout of a model (the
        group buffers draw one from the model's seed where it is None; None here is 0)
    :param order: the row of the result that each sample's features go to (a permutation); None: the samples' order.
        A rollout's features are wanted env-major while its observations are step-major: placing each block's rows
        where they go costs less than reordering the whole matrix after
    :return: [1, t, t**2, t**3, z, z**2, the Fourier features], float64, with t the scaled episode time and z the clipped
        observation, or where it has more than ``MAX_OBS_FEATURES`` dimensions, its random projection on that many
        (distances kept, as Johnson and Lindenstrauss's lemma has it): the number of features, and so the fit's cost,
        does not grow with the observation's size
    """
    obs_dim = flat_obs.shape[1]
    projection, weights, phases = random_maps(obs_dim, fourier, fourier_scale, fourier_seed or 0)
    t = (times.astype(np.float64) / TIME_SCALE)[:, None]
    n_values = obs_dim if projection is None else projection.shape[1]
    features = np.empty((len(times), BASE_COLUMNS + 2 * n_values + fourier))
    # in blocks of rows, so that no copy of a large observation is made in float64 whole
    for start in range(0, len(times), FEATURE_BLOCK):
        rows = slice(start, start + FEATURE_BLOCK)
        block = features[rows] if order is None else np.empty((len(t[rows]), features.shape[1]))
        block[:, :BASE_COLUMNS] = np.concatenate([np.ones_like(t[rows]), t[rows], t[rows] ** 2, t[rows] ** 3], axis=1)
        values = np.clip(flat_obs[rows], -OBS_CLIP, OBS_CLIP).astype(np.float64)
        if projection is not None:
            values = values @ projection
        block[:, BASE_COLUMNS : BASE_COLUMNS + n_values] = values
        block[:, BASE_COLUMNS + n_values : BASE_COLUMNS + 2 * n_values] = values**2
        if fourier:
            angles = values @ weights
            angles += phases
            # in place, by torch, whose float64 cosine is vectorised (numpy's is not: four times the cost) and within
            # an ulp of numpy's
            th.from_numpy(angles).cos_()
            angles *= np.sqrt(2.0 / fourier)
            block[:, BASE_COLUMNS + 2 * n_values :] = angles
        if order is not None:
            features[order[rows]] = block
    return features


@functools.lru_cache(maxsize=8)
def random_maps(
    obs_dim: int, fourier: int, fourier_scale: float | None, seed: int
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """
    :return: the projection of an observation's values on ``MAX_OBS_FEATURES`` dimensions (None where it has no more),
        normal of standard deviation ``1 / sqrt(MAX_OBS_FEATURES)``; the Fourier features' ``W`` and ``b``; drawn in
        this order from ``seed``, read-only (cached)
    """
    rng = np.random.default_rng(seed)
    projection = None
    if obs_dim > MAX_OBS_FEATURES:
        projection = rng.normal(0.0, 1.0 / np.sqrt(MAX_OBS_FEATURES), size=(obs_dim, MAX_OBS_FEATURES))
    scale = np.sqrt(obs_dim) if fourier_scale is None else fourier_scale
    weights = rng.normal(0.0, 1.0 / scale, size=(min(obs_dim, MAX_OBS_FEATURES), fourier))
    phases = rng.uniform(0.0, 2 * np.pi, size=fourier)
    for array in (projection, weights, phases):
        if array is not None:
            array.flags.writeable = False
    return projection, weights, phases


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


def knn_mean(train: np.ndarray, targets: np.ndarray, queries: np.ndarray, n_neighbors: int, max_samples: int) -> np.ndarray:
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
    order = trajectory_order(trajectory_ids, rows)
    if order is None:
        return None
    return order % min(n_folds, int(order.max()) + 1)


def trajectory_order(trajectory_ids: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray | None:
    """
    :return: the place of every sample's trajectory in the order they are dealt to folds (``trajectory_folds``); None
        when the group holds a single trajectory
    """
    _, first, dense = np.unique(trajectory_ids, return_index=True, return_inverse=True)
    n_trajectories = int(dense.max()) + 1 if len(dense) else 0
    if n_trajectories < 2:
        return None
    if rows is not None:
        dense = np.argsort(np.argsort(rows[first], kind="stable"), kind="stable")[dense]
    return dense
