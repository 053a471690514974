"""
A fitted baseline's estimate of one rollout, cross-fitted: the group's trajectories are dealt to folds, and everything
a fold's baselines read comes from the other folds (and, for the linear baseline, the remembered rollouts), the
completion of the cut returns included. Changing one trajectory's rewards moves none of its own baselines, whatever
``truncated_returns`` is.

Per fold, the returns that the rollout's end cut are completed with a value fitted on the other folds: the linear
baseline iterates (``VALUE_ITERATIONS``) from the last rollout's fit (or from a fit on the complete returns alone),
each fit's targets being the cut returns completed with the previous fit's values; knn takes the mean complete return
of the nearest samples. A sample's own return is completed by its own fold's fit.

With ``pooled_memory``, each fold of the linear baseline has a second candidate: the last ``pooled_memory`` rollouts,
uncapped, at one level with the current rollout's. A rollout of few trajectories reads its level poorly from half of
them, and the pooled level gives that evidence; a drift makes it lag. By default (``pooled_choice="halves"``) the fold
takes, with its size, whichever of the two fits on one half of its training trajectories (and the memory) predicts the
other half best, so it keeps the level of its own where the returns have moved. Halves of few trajectories make that a
noisy choice; with ``pooled_choice="previous"`` every fold takes the candidate (its size still chosen on the halves)
whose folds predicted the previous rollout's returns best, held out: a choice on a whole rollout's evidence that reads
none of the current returns, and lags a drift by one rollout. Under either choice a fold without two halves (one that
trains on fewer than two trajectories: every fold of a rollout of one or two) keeps the level given.

Pure array code on one group's samples, env-major (see ``returns.env_major``); nothing here knows of Stable-Baselines3.
"""

import functools
from typing import Any, NamedTuple

import numpy as np

from sb3_gpg.estimator.baseline_memory import BASE_FEATURES, VALUE_ITERATIONS, BaselineMemory, Equations, Fit, System
from sb3_gpg.estimator.fitted_baselines import knn_mean, standardise
from sb3_gpg.estimator.lambda_targets import LambdaTerms

# The sizes of fit a fold chooses among (its first columns: the time's, then the observation's, then the Fourier
# features), by a fit on half its training trajectories scored on the other half (``training_halves``), unless
# ``choose_size`` is False: the halves score long returns, which the time may explain almost alone where
# lambda-returns, reading the baseline as a critic over a few steps, still need the state
CANDIDATE_SIZES = (BASE_FEATURES, 16, 64, 256)


class Samples(NamedTuple):
    """
    The group's samples as the fitted baselines read them, env-major.

    :param features: the fitted baseline's features, one row per sample (knn's before standardisation)
    :param partial: the returns within the rollout (complete, or cut where the rollout ended)
    :param discounts: ``gamma ** k`` (k steps to the rollout's end) for a cut return that is to be completed, else 0
    :param envs: the env of every sample
    :param cut_features: the features of each env's state after the rollout, one row per env
    :param rounds: the parity of the round of dealing in which every sample's trajectory went to its fold (the
        trajectories are dealt to the folds in turn: ``trajectory_folds``); with the folds it places each trajectory
        in a half of every other fold's training set (``training_halves``), on which the linear fit's size is chosen
    :param lambdas: where the linear baseline is fitted on its own lambda-returns, what they add to each sample's row
        (``lambda_targets``); None: it is fitted on the returns (which are what its sizes are scored on, either way)
    """

    features: np.ndarray
    partial: np.ndarray
    discounts: np.ndarray
    envs: np.ndarray
    cut_features: np.ndarray
    rounds: np.ndarray
    lambdas: LambdaTerms | None = None


class FittedEstimate(NamedTuple):
    """
    :param baselines: the baseline of every sample; None where there is nothing to fit on yet (a single trajectory
        and an empty memory: the bins' baselines are used, and the rollout is remembered)
    :param returns: every sample's return, a cut one completed by its own fold's fit
    :param values_at_cut: the value of each env's state after the rollout, by the fold of its cut trajectory (0 where
        none was found)
    :param found: which envs have one
    :param memory_entry: the linear baseline's statistics of this rollout, for the memory (None for knn)
    :param last_fit: the mean of the folds' linear fits (within the widest of their ranges), where the next rollout's
        value iteration starts
    :param fit_size: the mean over the folds of the features their linear fits used (``choose_size``); NaN without one
    :param pooled_share: the share of the folds that took the pooled candidate (``pooled_memory``), of those that had
        one (a memory); NaN where none had
    """

    baselines: np.ndarray | None
    returns: np.ndarray
    values_at_cut: np.ndarray
    found: np.ndarray
    memory_entry: Equations | None
    last_fit: Fit | None
    fit_size: float = float("nan")
    pooled_share: float = float("nan")


def fitted_estimate(
    baseline: str,
    samples: Samples,
    folds: np.ndarray | None,
    history: BaselineMemory | None,
    bootstrap: bool,
    **kwargs: Any,
) -> FittedEstimate | None:
    """
    :param baseline: ``"linear"`` or ``"knn"``
    :param samples: the group's samples
    :param folds: the fold of every sample (``fitted_baselines.trajectory_folds``); None for a single trajectory,
        whose baselines only a memory can give
    :param history: the linear baseline's memory of earlier rollouts, or None
    :param bootstrap: whether the cut returns are completed (``truncated_returns="bootstrap"``; ``samples.discounts``
        are then those of the cut returns)
    :param kwargs: the baseline's arguments
    :return: the estimate; None where knn has nothing to fit on (a single trajectory)
    """
    n_samples = len(samples.partial)
    if folds is None and not (baseline == "linear" and history is not None and len(history)):
        if baseline != "linear":
            return None
        # nothing to fit on yet: the rollout is remembered all the same, so that the memory starts
        entry = _equations(samples, np.ones(n_samples, dtype=bool))
        n_envs = len(samples.cut_features)
        return FittedEstimate(None, samples.partial.copy(), np.zeros(n_envs), np.zeros(n_envs, dtype=bool), entry, None)
    cut = samples.discounts > 0  # (all 0 where the cut returns are kept)
    if folds is None:
        folds = np.zeros(n_samples, dtype=np.int64)
        fold_ids: list[int] = [-1]  # fitted on the memory alone
    else:
        fold_ids = list(range(int(folds.max()) + 1))
    baselines, returns = np.empty(n_samples), samples.partial.copy()
    n_envs = len(samples.cut_features)
    values_at_cut, found = np.zeros(n_envs), np.zeros(n_envs, dtype=bool)
    if baseline == "knn":
        features, cut_features = standardise(samples.features, samples.cut_features)
        samples = samples._replace(features=features, cut_features=cut_features)
    fits: list[Fit | None] = []
    pooled: list[bool | None] = []
    # pooled_choice="previous": the candidate every fold takes, and each candidate's held-out error on this rollout
    take = None
    if baseline == "linear" and kwargs["pooled_choice"] == "previous" and history is not None and len(history):
        take = int(history.rollouts[-1].prefers_pooled)
    errors = np.zeros(2)
    # the memory's equations by their level and the remembered rollouts' weights: the folds whose weights agree (all of
    # them where the memory is uncapped) share one assembly
    systems: dict[tuple[str, tuple[float, ...]], System] = {}
    # the linear fit's statistics of each fold's samples by round parity, made once: a fold's training halves and the
    # memory's entry are sums of them
    n_folds = int(folds.max(initial=-1)) + 1
    blocks = [
        [_equations(samples, (folds == fold) & (samples.rounds == parity)) for parity in (0, 1)]
        for fold in range(n_folds if baseline == "linear" else 0)
    ]
    for fold_id in fold_ids:
        own = folds == fold_id if fold_id >= 0 else np.ones(n_samples, dtype=bool)
        train = ~own if fold_id >= 0 else np.zeros(n_samples, dtype=bool)
        fold_fit: Fit | None
        if baseline == "linear":
            # fitted on the other folds' samples, in halves (none where the fit is the memory's alone)
            split = np.where(train, training_halves(samples.rounds, folds, fold_id, n_folds), -1)
            parts: list[list[Equations]] = [[], []]
            for fold, pair in enumerate(blocks if fold_id >= 0 else []):
                for parity in (0, 1):
                    if fold != fold_id:
                        parts[training_halves(parity, fold, fold_id, n_folds)].append(pair[parity])
            halves = [_sum(part, samples) for part in parts]
            fold_baselines, values, has_value, fold_fit, fold_pooled, fold_errors = _linear_fold(
                samples, train, own, split, halves, history, bootstrap, systems, take, **kwargs
            )
            errors += fold_errors
        else:
            fold_baselines, values, has_value, fold_fit, fold_pooled = _knn_fold(
                samples, train, own, history, bootstrap, **kwargs
            )
        baselines[own] = fold_baselines
        own_cut = own & cut
        returns[own_cut] += samples.discounts[own_cut] * values[samples.envs[own_cut]]
        own_envs = np.unique(samples.envs[own_cut])
        values_at_cut[own_envs], found[own_envs] = values[own_envs], has_value
        fits.append(fold_fit)
        pooled.append(fold_pooled)
    memory_entry: Equations | None = None
    last_fit: Fit | None = None
    fit_size = pooled_share = float("nan")
    if baseline == "linear":
        whole = _sum([block for pair in blocks for block in pair], samples)
        memory_entry = whole._replace(
            low=float(returns.min(initial=np.inf)),
            high=float(returns.max(initial=-np.inf)),
            prefers_pooled=bool(take is not None and errors[1] < errors[0]),
        )
        usable = [fit for fit in fits if fit is not None]
        if usable:
            mean = np.zeros(max(len(fit.coefficients) for fit in usable))
            for fit in usable:
                mean[: len(fit.coefficients)] += fit.coefficients / len(usable)
            last_fit = Fit(mean, min(fit.low for fit in usable), max(fit.high for fit in usable))
            fit_size = float(np.mean([len(fit.coefficients) for fit in usable]))
        tried = [choice for choice in pooled if choice is not None]
        if tried:
            pooled_share = float(np.mean(tried))
    return FittedEstimate(baselines, returns, values_at_cut, found, memory_entry, last_fit, fit_size, pooled_share)


def training_halves(rounds: Any, folds: Any, fold_id: int, n_folds: int) -> Any:
    """
    :param rounds: the parity of the round of dealing of a trajectory (``Samples.rounds``), or of each
    :param folds: its fold, or each one's, other than ``fold_id``
    :return: its half of the training set of the fold ``fold_id``: the other folds' trajectories alternate halves in
        the order they were dealt (its place among them is the rounds before its own times the ``n_folds - 1`` dealt
        to the other folds in each, then its fold's place among them), so that a fold fitted on two trajectories or
        more can choose its fit, however few are dealt to each fold
    """
    return (rounds * (n_folds - 1) + folds - (folds > fold_id)) % 2


def _linear_fold(
    samples: Samples,
    train: np.ndarray,
    own: np.ndarray,
    split: np.ndarray,
    halves: list[Equations],
    history: BaselineMemory | None,
    bootstrap: bool,
    systems: dict[tuple[str, tuple[float, ...]], System],
    take: int | None,
    **kwargs: Any,
) -> tuple[np.ndarray, np.ndarray, bool, Fit, bool | None, np.ndarray]:
    """
    :param train: the samples fitted on (the other folds')
    :param own: the samples whose baselines are fitted
    :param split: the half of the samples fitted on that every sample is in (``training_halves``; -1 outside them)
    :param halves: the statistics of each half of the samples fitted on
    :param bootstrap: whether the cut returns are completed
    :param systems: the memory's systems already assembled, by level and the remembered rollouts' weights (filled here)
    :param take: the candidate to take (``pooled_choice="previous"``), or None to choose it on the halves
    :return: the own samples' baselines, each env's value after the rollout, whether there is one, the fit, whether
        it took the pooled candidate (``pooled_memory``; None where it had none), and where ``take`` is given, each
        candidate's squared error on the own samples' returns (completed as the fit's targets started), else zeros
    """
    ridge, n_train = kwargs["ridge"], int(train.sum())
    remembered: list[tuple[float, Equations]] = []
    if history is not None and len(history):
        remembered = history.weighted(kwargs["recency"], n_train, kwargs["memory_weight"], kwargs["memory"])
    memory = _system(systems, remembered, kwargs["level"])
    candidates = [memory]
    if kwargs["pooled_memory"] and history is not None and len(history):
        pooled = history.weighted(kwargs["pooled_recency"], n_train, None, kwargs["pooled_memory"])
        candidates.append(_system(systems, pooled, "pooled"))
    completion = None
    if bootstrap:
        completion = history.last_fit if history is not None and remembered else None
        complete = train & (samples.discounts == 0)
        if completion is None and (complete.any() or remembered):
            # where to start: the other folds' complete returns, and the remembered rollouts' returns as far as they saw
            start = memory.plus(_equations(samples, complete))
            completion = _fit(start, None, ridge, BASE_FEATURES, _targets(samples, complete, None))
    current = halves[0].plus(halves[1]) if train.any() else None
    errors = np.zeros(2)
    # a fold without two halves (trained on fewer than two trajectories, or on the memory alone) keeps the level given
    # under either choice: the previous rollout's errors would hand the pooled level to a fit that reads no current level
    if take is not None and len(candidates) > 1 and _two_halves(halves):
        # each candidate at its size on the halves, both scored on the own samples for the next rollout's choice
        sizes = [
            _chosen_fit(samples, split, halves, [candidate], completion, ridge, kwargs["choose_size"])[1]
            for candidate in candidates
        ]
        fits = [
            _iterated_fit(candidate.plus(current), completion, ridge, size, samples, train)
            for candidate, size in zip(candidates, sizes, strict=True)
        ]
        targets = _targets(samples, own, completion)
        errors = np.array([np.sum((each.values(samples.features[own]) - targets) ** 2) for each in fits])
        chosen, fit = take, fits[take]
    else:
        chosen, size = _chosen_fit(samples, split, halves, candidates, completion, ridge, kwargs["choose_size"])
        fit = _iterated_fit(candidates[chosen].plus(current), completion, ridge, size, samples, train)
    values = fit.values(samples.cut_features) if completion is not None else np.zeros(len(samples.cut_features))
    took_pooled = chosen == 1 if len(candidates) > 1 else None
    return fit.values(samples.features[own]), values, completion is not None, fit, took_pooled, errors


def _iterated_fit(system: System, completion: Fit | None, ridge: float, size: int, samples: Samples, train: np.ndarray) -> Fit:
    """
    :return: the fit of ``system`` on the first ``size`` features, its targets the ``train`` samples' returns completed
        by ``completion``, then (where there is one) by each fit in turn for ``VALUE_ITERATIONS`` more fits
    """
    fit = _fit(system, completion, ridge, size, _targets(samples, train, completion))
    for _ in range(VALUE_ITERATIONS if completion is not None else 0):
        fit = _fit(system, fit, ridge, size, _targets(samples, train, fit))
    return fit


def _system(
    systems: dict[tuple[str, tuple[float, ...]], System], remembered: list[tuple[float, Equations]], level: str
) -> System:
    """
    :return: the remembered rollouts' equations at ``level``, assembled once for every fit of the fold (and of the
        folds weighing them alike)
    """
    key = (level, tuple(weight for weight, _ in remembered))
    if key not in systems:
        systems[key] = System(remembered, level)
    return systems[key]


def _fit(system: System, completion: Fit | None, ridge: float, size: int, targets: np.ndarray) -> Fit:
    """
    :param system: the fold's normal equations (``System``)
    :param completion: the fit that completes the cut returns, or None to keep them cut
    :param ridge: the penalty per sample on a standardised coefficient
    :param size: the features fitted on: the first ``size``
    :param targets: the returns of the current samples fitted on, as completed
    :return: the ridge fit (``System.solve``) with the range of the returns it was fitted on: the current samples'
        as completed, and the remembered ones'
    """
    coefficients = system.solve(completion, ridge, size)
    assert coefficients is not None, "a fit has current samples or a memory"
    low = min([float(targets.min(initial=np.inf)), *(rollout.low for _, rollout in system.remembered)])
    high = max([float(targets.max(initial=-np.inf)), *(rollout.high for _, rollout in system.remembered)])
    return Fit(coefficients, low, high)


def _targets(samples: Samples, rows: np.ndarray, completion: Fit | None) -> np.ndarray:
    """:return: the returns of the samples ``rows``, cut ones completed by the fit ``completion``"""
    if completion is None:
        return samples.partial[rows]
    # each env's value once, then read by its samples (not the cut state's features copied to every sample)
    return samples.partial[rows] + samples.discounts[rows] * completion.values(samples.cut_features)[samples.envs[rows]]


def _chosen_fit(
    samples: Samples,
    split: np.ndarray,
    halves: list[Equations],
    candidates: list[System],
    completion: Fit | None,
    ridge: float,
    choose_size: bool,
) -> tuple[int, int]:
    """
    :param split: the half of the training trajectories that every sample is in (-1 outside them)
    :param halves: the statistics of the two halves
    :param candidates: the remembered rollouts' equations: at the level given, then (``pooled_memory``) pooled
    :param choose_size: whether the size is chosen (else all the features)
    :return: the candidate and the size of fit (``CANDIDATE_SIZES``, and all the features, where ``choose_size``)
        whose fit on one half and the memory predicts the other half best, summed over both ways (the first of them
        on a tie); with no two halves to choose on (a training set of one trajectory), the first candidate, and all
        the features where it has a memory (a rollout of long episodes, whose fit rests on it) or the size is not
        chosen, else the time's alone
    """
    n_features = samples.features.shape[1]
    if not _two_halves(halves) or (len(candidates) == 1 and not choose_size):
        return 0, n_features if candidates[0].remembered or not choose_size else BASE_FEATURES
    sizes = sorted({min(size, n_features) for size in (*CANDIDATE_SIZES, n_features)}) if choose_size else [n_features]
    # each half's rows, features and targets once, for every candidate and size
    held_out = [(samples.features[rows], _targets(samples, rows, completion)) for rows in (split == 0, split == 1)]
    choices, errors = [], []
    for number, memory in enumerate(candidates):
        choices += [(number, size) for size in sizes]
        errors += halves_errors(memory, halves, held_out, completion, ridge, sizes)
    return choices[int(np.argmin(errors))]


def _two_halves(halves: list[Equations]) -> bool:
    """:return: whether both halves of a fold's training trajectories hold samples (it trains on two or more)"""
    return bool(halves[0].n_samples and halves[1].n_samples)


def halves_errors(
    memory: System,
    halves: list[Equations],
    held_out: list[tuple[np.ndarray, np.ndarray]],
    completion: Fit | None,
    ridge: float,
    sizes: list[int],
) -> list[float]:
    """
    :param memory: a candidate's remembered rollouts' equations
    :param halves: the statistics of the two halves of the training trajectories
    :param held_out: each half's features and targets (its returns, completed by ``completion``)
    :return: per size, the squared error of the fit on one half and the memory in predicting the other half, summed
        over both ways (``_chosen_fit``'s score)
    """
    systems = [memory.plus(halves[half]) for half in (0, 1)]
    errors = []
    for size in sizes:
        error = 0.0
        for half in (0, 1):
            fit = _fit(systems[1 - half], completion, ridge, size, held_out[1 - half][1])
            features, targets = held_out[half]
            error += float(np.sum((fit.values(features) - targets) ** 2))
        errors.append(error)
    return errors


def _equations(samples: Samples, rows: np.ndarray) -> Equations:
    """:return: the statistics of the samples ``rows``, on the returns or on the lambda-returns (``Samples.lambdas``)"""
    terms, features = samples.lambdas, samples.features[rows]
    return Equations.of(
        features,
        samples.partial[rows] if terms is None else terms.partial[rows],
        samples.discounts[rows] if terms is None else terms.discounts[rows],
        samples.envs[rows],
        samples.cut_features,
        samples.partial[rows],
        None if terms is None else terms.cross(features, rows),
    )


def _sum(parts: list[Equations], samples: Samples) -> Equations:
    """:return: the statistics of the samples of all ``parts`` (of none: an empty set of ``samples``')"""
    if not parts:
        return _equations(samples, np.zeros(len(samples.partial), dtype=bool))
    return functools.reduce(Equations.plus, parts)


def _knn_fold(
    samples: Samples, train: np.ndarray, own: np.ndarray, history: BaselineMemory | None, bootstrap: bool, **kwargs: Any
) -> tuple[np.ndarray, np.ndarray, bool, None, None]:
    """
    :return: the own samples' baselines (the mean return of the nearest samples of the other folds, their cut returns
        completed), each env's value after the rollout (the mean complete return of the nearest complete samples of the
        other folds), whether there is one, and no fit
    """
    n_neighbors, max_samples = kwargs["n_neighbors"], kwargs["max_samples"]
    complete = train & (samples.discounts == 0)
    values = np.zeros(len(samples.cut_features))
    has_value = bootstrap and bool(complete.any())
    if has_value:
        train_returns = samples.partial[complete]
        values = knn_mean(samples.features[complete], train_returns, samples.cut_features, n_neighbors, max_samples)
    targets = samples.partial[train] + samples.discounts[train] * values[samples.envs[train]]
    baselines = knn_mean(samples.features[train], targets, samples.features[own], n_neighbors, max_samples)
    return baselines, values, has_value, None, None
