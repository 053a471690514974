"""
The linear baseline's normal equations (``baseline_memory.System``), assembled once and read by every size of fit and
every completion: each fit against weighted ridge regression written out on the samples themselves.
"""

import numpy as np
import pytest

from sb3_gpg.estimator.baseline_memory import LEVELS, Equations, Fit, System

N_FEATURES, N_ENVS, RIDGE = 7, 3, 1e-3


def rollout(rng, n_samples, cross=False):
    """
    :param cross: under lambda-returns: each target carries the fit's own value of the next state, ``gamma * (1 -
        lambda)`` times its features (here 0.1 times random ones, the constant's where the episode goes on)
    :return: a rollout's equations and what they were made of: features (constant first), returns, cut parts, and
        those next states' scaled features (None without ``cross``)
    """
    features = np.concatenate([np.ones((n_samples, 1)), rng.normal(size=(n_samples, N_FEATURES - 1))], axis=1)
    returns = rng.normal(size=n_samples)
    envs = np.sort(rng.integers(0, N_ENVS, n_samples))
    discounts = np.where(rng.random(n_samples) < 0.3, 0.9, 0.0)
    cut_states = np.concatenate([np.ones((N_ENVS, 1)), rng.normal(size=(N_ENVS, N_FEATURES - 1))], axis=1)
    following = None
    if cross:
        following = 0.1 * np.concatenate([rng.random((n_samples, 1)) < 0.9, rng.normal(size=(n_samples, N_FEATURES - 1))], 1)
    equations = Equations.of(
        features, returns, discounts, envs, cut_states, returns, None if following is None else features.T @ following
    )
    return equations, (features, returns, discounts, envs, cut_states, following)


def level_row(level, index, n_remembered):
    """:return: the level columns of the remembered rollout ``index`` (oldest first; None: the current rollout)"""
    if level == "pooled" or n_remembered == 0:
        return []
    if level == "trend":
        return [0.0 if index is None else float(n_remembered - index)]
    return [1.0 if index == other else 0.0 for other in range(n_remembered)]


def written_out(current, remembered, completion, size, ridge, level="own"):
    """
    :return: the ridge fit on the samples themselves: a design of the first ``size`` features and the level columns
        (``level_row``: one indicator per remembered rollout, one column of its age, or none), rows weighted, each
        column penalised by ridge x count x its variance, the constant by 1e-12 of that; cut returns completed by
        ``completion``; under lambda-returns the fixed point whose targets add the fit's own values of the next
        states (a remembered rollout's level among them)
    """
    rows, following_rows, targets, weights = [], [], [], []
    parts = [(1.0, current, None)] + [(weight, data, index) for index, (weight, data) in enumerate(remembered)]
    for weight, (features, returns, discounts, envs, cut_states, following), effect in parts:
        values = np.zeros(N_ENVS) if completion is None else completion.values(cut_states)
        for sample in range(len(returns)):
            indicators = level_row(level, effect, len(remembered))
            rows.append(list(features[sample, :size]) + indicators)
            following_row = np.zeros(size) if following is None else following[sample, :size]
            following_rows.append(list(following_row) + [following_row[0] * indicator for indicator in indicators])
            targets.append(returns[sample] + discounts[sample] * values[envs[sample]])
            weights.append(weight)
    design, following, targets, weights = np.array(rows), np.array(following_rows), np.array(targets), np.array(weights)
    # the level of a rollout with no sample is in no row: no column
    kept = np.r_[np.ones(size, dtype=bool), np.any(design[:, size:] != 0, axis=0)]
    design, following = design[:, kept], following[:, kept]
    count = weights.sum()
    means = weights @ design / count
    variances = weights @ design**2 / count - means**2
    penalty = ridge * count * variances
    penalty[0] = ridge * count * 1e-12
    # (X^T W X + penalty) w = X^T W (targets + N w): the targets' own values moved to the left
    gram = design.T @ (weights[:, None] * design) + np.diag(penalty) - design.T @ (weights[:, None] * following)
    return np.linalg.solve(gram, design.T @ (weights * targets))[:size]


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize(("n_remembered", "cross"), [(0, False), (1, False), (3, False), (0, True), (3, True), (4, True)])
def test_every_size_and_completion_read_from_one_assembly_is_the_written_out_ridge_fit(n_remembered, cross, level):
    rng = np.random.default_rng(n_remembered)
    current, current_data = rollout(rng, 40, cross)
    # (of four, the second has no sample: it adds no row and keeps its place in the ages)
    sizes = [0 if (n_remembered, index) == (4, 1) else 30 for index in range(n_remembered)]
    remembered = [(0.8 ** (n_remembered - index), *rollout(rng, size, cross)) for index, size in enumerate(sizes)]
    system = System([(weight, equations) for weight, equations, _ in remembered], level).plus(current)
    completions = [None, Fit(rng.normal(size=N_FEATURES), -1.0, 1.0), Fit(rng.normal(size=3), -0.5, 2.0)]
    for completion in completions:  # a completion after another: the system's cached moments are replaced
        remembered_data = [(weight, data) for weight, _, data in remembered]
        for size in (1, 3, N_FEATURES):
            for ridge in (RIDGE, 10 * RIDGE):  # each (size, ridge) its own factorisation
                expected = written_out(current_data, remembered_data, completion, size, ridge, level)
                np.testing.assert_allclose(system.solve(completion, ridge, size), expected, rtol=1e-8, atol=1e-10)


def test_an_unknown_level_is_refused():
    with pytest.raises(ValueError, match=r"level must be one of \('own', 'trend', 'pooled'\), got 'shared'"):
        System([], "shared")


def test_a_singular_system_gets_the_least_squares_fit():
    # two equal columns and a ridge too small to tell them apart: no LU factorisation, the minimum-norm fit
    rng = np.random.default_rng(0)
    features = np.concatenate([np.ones((20, 1)), np.repeat(rng.normal(size=(20, 1)), 2, axis=1)], axis=1)
    returns = features[:, 1] * 2.0
    equations = Equations.of(features, returns, np.zeros(20), np.zeros(20, dtype=int), np.ones((1, 3)), returns)
    coefficients = System([]).plus(equations).solve(None, 1e-300, 3)
    np.testing.assert_allclose(coefficients, [0.0, 1.0, 1.0], atol=1e-8)


def shifted_fit(level, shifts, ridge=1e-9):
    """
    :param shifts: added to the returns of each of three remembered rollouts (oldest first), cut ones included
    :return: the current rollout's coefficients (completing the cut returns) and their change by the shifts
    """
    rng = np.random.default_rng(7)
    current, _ = rollout(rng, 40)
    completion = Fit(rng.normal(size=N_FEATURES), -1.0, 1.0)
    fits = []
    for moved in (np.zeros(3), np.asarray(shifts, dtype=float)):
        rng_memory = np.random.default_rng(8)
        remembered = []
        for index, shift in enumerate(moved):
            features, returns, discounts, envs, cut_states, _ = rollout(rng_memory, 30)[1]
            equations = Equations.of(features, returns + shift, discounts, envs, cut_states, returns + shift)
            remembered.append((0.8 ** (3 - index), equations))
        fits.append(System(remembered, level).plus(current).solve(completion, ridge, N_FEATURES))
    return fits[0], np.abs(fits[1] - fits[0]).max()


@pytest.mark.parametrize(
    ("level", "shifts", "moves"),
    [
        ("own", [5.0, -2.0, 9.0], False),  # any level per rollout
        ("trend", [3.0, 2.0, 1.0], False),  # a drift steady in the rollouts' age (3, 2, 1 rollouts back)
        ("trend", [0.0, 0.0, 3.0], True),  # a sudden change lags
        ("pooled", [1.0, 1.0, 1.0], True),  # any drift lags
    ],
)
def test_a_drift_of_the_remembered_returns_moves_the_current_fit_only_where_its_level_does_not_follow(level, shifts, moves):
    # The promise of each level, checked by moving the remembered returns: the current rollout's fit is read at its
    # own level (the drift absorbed by the level columns) or lags; under a vanishing ridge, as the level columns are
    # penalised as any other
    fit, change = shifted_fit(level, shifts)
    assert np.abs(fit).max() > 0.01
    if moves:
        assert change > 0.05, change
    else:
        assert change < 1e-6, change
