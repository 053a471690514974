"""
The linear baseline's fit in closed form, and its memory of earlier rollouts.

A rollout's samples enter a fit as their sufficient statistics (``Equations``): the features' Gram matrix, their
products with the returns as far as the rollout saw them, and for the returns that the rollout's end cut, the products
with the features of the state where they were cut, so that any later fit completes them with its own value of that
state (n-step targets over the current fit, as a critic's targets are) rather than with a completion made once and
kept. Under the lambda-returns target (``lambda_targets``; the default where GAE's lambda is below 1) the returns are the
lambda-returns over the fit itself, and the statistics hold the products of the features with the next states' too.
Nothing here grows with the observation's size: the statistics are square in the number of features.

The ridge is scaled to the data: each coefficient is penalised by ``ridge`` times the number of samples times its
feature's variance (ridge regression on standardised features, the intercept free). How the remembered rollouts'
returns are levelled against the current rollout's is ``level`` (``LEVELS``): by default each remembered rollout gets
an intercept of its own (a fixed effect), so that the memory gives the fit the shape of the value over the states and
times it saw, and the current rollout its level: returns that drift (a policy improving, rewards rescaled) move the
fit as fast as the current rollout shows. Remembered rollouts weigh ``recency ** k`` (k rollouts back), scaled so that
together they weigh at most ``memory_weight`` times the current rollout's samples in the fit (by default as much).

Pure array code; nothing here knows of Stable-Baselines3.
"""

import copy
from collections import deque
from typing import NamedTuple

import numpy as np
import torch as th

from sb3_gpg.estimator.optimism import LAPSE_EPISODES

# The features' column that is constant 1 (``fitted_baselines.linear_features``): its products are the sums
CONSTANT = 0
# Columns that every fit uses (the constant and the cubic in the episode time)
BASE_FEATURES = 4
# Fitted value iterations: each re-completes the cut returns with the previous fit's values
VALUE_ITERATIONS = 2
# How the remembered rollouts' returns are levelled against the current rollout's. "own": an intercept per remembered
# rollout, so that only the current rollout's samples set its level (no lag under any drift, but a level read from a
# fold of few trajectories). "trend": the rollouts' levels on a line in their age (k rollouts back), so that every
# rollout informs the level and a drift steady over the memory moves it without lag. "pooled": one level for all (the
# most evidence, lagging any drift)
LEVELS = ("own", "trend", "pooled")


class Fit(NamedTuple):
    """
    A linear fit and the range of the returns it was fitted on, within which its values are read.

    :param coefficients: the coefficients of the first ``len(coefficients)`` features
    :param low: the smallest return fitted on
    :param high: the largest
    """

    coefficients: np.ndarray
    low: float
    high: float

    def values(self, features: np.ndarray) -> np.ndarray:
        """
        :return: the fit's value of each row of ``features``, within [low, high]: its cubic in the episode time,
            fitted on some times only, would otherwise extrapolate to any value at the others (and, completing cut
            returns, carry it into the next fits' targets)
        """
        return np.clip(features[:, : len(self.coefficients)] @ self.coefficients, self.low, self.high)


class Equations(NamedTuple):
    """
    Samples as a linear fit reads them.

    :param gram: ``X^T X``
    :param partial: ``X^T y``, with ``y`` the returns within the rollout (complete, or cut where it ended)
    :param cut_sums: per env, the sum of its cut samples' features, each times ``gamma ** k`` (k steps to the cut),
        so that ``partial + cut_sums^T fit.values(cut_states)`` are the products with the returns completed by a fit
    :param cut_states: the features of each env's state after the rollout
    :param n_samples: the number of samples
    :param low: the smallest return (as completed when the samples were fitted on)
    :param high: the largest
    :param goal_seen: whether an episode of the rollout found a goal (``optimism.read_goal``)
    :param longest_episode: the longest episode time of the rollout
    :param limits_after_goal: the episodes that ran to the limit after the rollout's last goal (all where it found none)
    :param cross: under lambda-returns, ``gamma * (1 - lambda) * X^T N`` (``lambda_targets``): the returns' products
        with the features are then ``partial + cross w`` for a fit of coefficients w; None under the returns
    :param prefers_pooled: whether the folds' fits at the pooled candidate's level predicted the rollout's returns,
        held out, better than at the level given (``pooled_choice="previous"`` reads it at the next rollout); False
        also where they were not compared (no memory yet, or ``pooled_choice="halves"``). Set on the memory's entry
        alone: ``plus`` does not carry it
    """

    gram: np.ndarray
    partial: np.ndarray
    cut_sums: np.ndarray
    cut_states: np.ndarray
    n_samples: int
    low: float
    high: float
    goal_seen: bool = False
    longest_episode: int = 0
    limits_after_goal: int = 0
    cross: np.ndarray | None = None
    prefers_pooled: bool = False

    @classmethod
    def of(
        cls,
        features: np.ndarray,
        partial: np.ndarray,
        discounts: np.ndarray,
        envs: np.ndarray,
        cut_states: np.ndarray,
        returns: np.ndarray,
        cross: np.ndarray | None = None,
    ) -> "Equations":
        """
        :param features: one row per sample, float64
        :param partial: the returns within the rollout
        :param discounts: ``gamma ** k`` to the cut for a cut return, 0 for a complete one
        :param envs: the env of every sample, in order (env-major: each env's samples one run of rows)
        :param cut_states: the features of each env's state after the rollout
        :param returns: the returns as completed, for the range
        :param cross: under lambda-returns, the products with the next states' features (``Equations.cross``)
        """
        cut_sums = np.zeros_like(cut_states)
        cut = discounts > 0
        if cut.any():
            # the samples are env-major, so each env's cut samples are one run of rows: summed per run (np.add.at's
            # sums up to rounding, at a fraction of its cost)
            cut_envs, starts = np.unique(envs[cut], return_index=True)
            cut_sums[cut_envs] = np.add.reduceat(features[cut] * discounts[cut, None], starts, axis=0)
        return cls(
            features.T @ features,
            features.T @ partial,
            cut_sums,
            cut_states,
            len(partial),
            float(returns.min()) if len(returns) else np.inf,
            float(returns.max()) if len(returns) else -np.inf,
            cross=cross,
        )

    def plus(self, other: "Equations") -> "Equations":
        """:return: the statistics of both sets of samples"""
        assert self.cut_states is other.cut_states, "samples of one rollout"
        return Equations(
            self.gram + other.gram,
            self.partial + other.partial,
            self.cut_sums + other.cut_sums,
            self.cut_states,
            self.n_samples + other.n_samples,
            min(self.low, other.low),
            max(self.high, other.high),
            cross=None if self.cross is None or other.cross is None else self.cross + other.cross,
        )

    def moments(self, completion: Fit | None, n_columns: int) -> np.ndarray:
        """
        :param completion: the fit that completes the cut returns, or None to keep them cut
        :return: the products of the first ``n_columns`` features with the returns
        """
        if completion is None:
            return self.partial[:n_columns]
        return self.partial[:n_columns] + self.cut_sums[:, :n_columns].T @ completion.values(self.cut_states)


# What ``BaselineMemory.restore`` sets a memory back to: its rollouts, last fit, longest episode time, whether a goal
# counts as seen, and the episodes run to the limit since the last goal
MemoryState = tuple[list[Equations], Fit | None, int, bool, int]


def level_columns(ages: list[int], level: str) -> np.ndarray:
    """
    :param ages: each remembered rollout's age (k remembered rollouts back: one with no sample in its group is not)
    :param level: one of ``LEVELS``
    :return: each remembered rollout's values in the fit's level columns, a row per rollout (the current rollout's are 0)
    """
    if level == "own":
        return np.eye(len(ages))
    if level == "trend" and ages:
        return np.array(ages, dtype=np.float64)[:, None]
    if level in LEVELS:
        return np.zeros((len(ages), 0))
    raise ValueError(f"level must be one of {LEVELS}, got {level!r}.")


class BaselineMemory:
    """
    The last ``size`` rollouts' ``Equations``, the last fit (where the next fit's value iteration starts), and what
    the optimism reads of every rollout it took since it was cleared, however short the memory: the longest episode
    time, whether a goal was found (``goal_seen``), and how many episodes in a row have run to the limit since.

    :param size: the rollouts remembered
    :param goal_lapses: whether a goal found stops counting as seen once ``optimism.LAPSE_EPISODES`` episodes in a row
        after it have run to the limit (under ``gae_lambda="auto"``, ``auto_lambda``)
    """

    def __init__(self, size: int, goal_lapses: bool = False):
        self.goal_lapses = goal_lapses
        self.rollouts: deque[Equations] = deque(maxlen=size)
        self.last_fit: Fit | None = None
        self.longest_episode = 0
        self.goal_seen = False
        self.limits_since_goal = 0

    def __len__(self) -> int:
        return len(self.rollouts)

    def clear(self) -> None:
        self.rollouts.clear()
        self.last_fit = None
        self.longest_episode = 0
        self.goal_seen = False
        self.limits_since_goal = 0

    def remember(self, rollout: Equations, fit: Fit | None) -> None:
        """Keep a rollout's equations (the oldest forgotten past ``size``) and the fit made with them."""
        self.rollouts.append(rollout)
        self.last_fit = fit
        self.longest_episode = max(self.longest_episode, rollout.longest_episode)
        if rollout.goal_seen:
            self.goal_seen, self.limits_since_goal = True, rollout.limits_after_goal
        else:
            self.limits_since_goal += rollout.limits_after_goal
        if self.goal_lapses and self.limits_since_goal >= LAPSE_EPISODES:
            self.goal_seen = False

    def state(self) -> MemoryState:
        """:return: what ``restore`` sets the memory back to"""
        return list(self.rollouts), self.last_fit, self.longest_episode, self.goal_seen, self.limits_since_goal

    def restore(self, state: MemoryState) -> None:
        """:param state: the memory as ``state`` returned it"""
        self.rollouts.clear()
        self.rollouts.extend(state[0])
        self.last_fit, self.longest_episode, self.goal_seen, self.limits_since_goal = state[1:]

    def recent(self, count: int) -> list[Equations]:
        """:return: the last ``count`` remembered rollouts (all where there are fewer), oldest first"""
        return list(self.rollouts)[max(0, len(self.rollouts) - count) :]

    def weighted(self, recency: float, n_current: int, cap: float | None, count: int) -> list[tuple[float, Equations]]:
        """
        :param recency: the weight of the previous rollout; the one k back weighs ``recency ** k``
        :param n_current: the current rollout's samples in the fit
        :param cap: together the remembered rollouts weigh at most ``cap * n_current`` samples; None: no cap
        :param count: the last ``count`` rollouts are weighed (``recent``)
        :return: (weight, equations) of each of them, oldest first, the weights scaled to the cap (not scaled where
            the fit has no current sample: the memory is all it has)
        """
        rollouts = self.recent(count)
        raw = [recency ** (len(rollouts) - index) for index in range(len(rollouts))]
        total = sum(weight * rollout.n_samples for weight, rollout in zip(raw, rollouts, strict=True))
        scale = 1.0
        if cap is not None and total > 0 and n_current > 0:
            scale = min(1.0, cap * n_current / total)
        return [(weight * scale, rollout) for weight, rollout in zip(raw, rollouts, strict=True)]


class System:
    """
    The normal equations of a ridge fit on the current samples (weight 1) and the remembered ones, with columns after
    the features for the remembered rollouts' levels (``LEVELS``), assembled once over all the features so that every
    size of fit (the first ``size`` columns and the levels') and every completion of the cut returns reads a slice of
    them.

    :param remembered: (weight, equations) of each remembered rollout, oldest first
    :param level: how the remembered rollouts' returns are levelled against the current rollout's (``LEVELS``)
    """

    def __init__(self, remembered: list[tuple[float, Equations]], level: str = "own"):
        self.current: Equations | None = None
        self.remembered = [(weight, rollout) for weight, rollout in remembered if rollout.n_samples]
        self.n_features = len(self.remembered[0][1].partial) if self.remembered else 0
        # each remembered rollout's values in the level columns (the current rollout's are 0)
        ages = [len(remembered) - index for index, (_, rollout) in enumerate(remembered) if rollout.n_samples]
        self.levels = level_columns(ages, level)
        n_features, total = self.n_features, self.n_features + self.levels.shape[1]
        self.gram = np.zeros((total, total))
        # under lambda-returns, the targets' products with the features that the fit's own values make (Equations.cross)
        self.coupling: np.ndarray | None = None
        for (weight, rollout), level_row in zip(self.remembered, self.levels, strict=True):
            # a level column's products are the rollout's sums (the constant's products) times its value there; its
            # values, its next states' too, carry it
            block_gram = weight * rollout.gram
            self.gram[:n_features, :n_features] += block_gram
            self.gram[n_features:, :n_features] += np.outer(level_row, block_gram[CONSTANT])
            self.gram[n_features:, n_features:] += block_gram[CONSTANT, CONSTANT] * np.outer(level_row, level_row)
            if rollout.cross is not None:
                block_cross = weight * rollout.cross
                if self.coupling is None:
                    self.coupling = np.zeros((total, total))
                self.coupling[:n_features, :n_features] += block_cross
                self.coupling[n_features:, :n_features] += np.outer(level_row, block_cross[CONSTANT])
                self.coupling[:n_features, n_features:] += np.outer(block_cross[:, CONSTANT], level_row)
                self.coupling[n_features:, n_features:] += block_cross[CONSTANT, CONSTANT] * np.outer(level_row, level_row)
        self.gram[:n_features, n_features:] = self.gram[n_features:, :n_features].T
        self._moments: tuple[Fit | None, np.ndarray] | None = None
        self._factors: dict[tuple[int, float], tuple[np.ndarray, tuple[th.Tensor, th.Tensor] | None]] = {}

    def plus(self, current: Equations | None) -> "System":
        """
        :param current: the current rollout's equations, or None
        :return: the system of these remembered rollouts and the current rollout's samples (none where ``current``
            is None)
        """
        assert self.current is None, "one current rollout"
        system = copy.copy(self)
        system._moments, system._factors = None, {}
        if current is None or not current.n_samples:
            return system
        system.current, system.n_features = current, len(current.partial)
        n_features, total = system.n_features, system.n_features + self.levels.shape[1]
        system.gram = np.zeros((total, total)) if not self.remembered else self.gram.copy()
        system.gram[:n_features, :n_features] += current.gram
        if current.cross is not None:
            system.coupling = np.zeros((total, total)) if self.coupling is None else self.coupling.copy()
            system.coupling[:n_features, :n_features] += current.cross
        return system

    def moments(self, completion: Fit | None) -> np.ndarray:
        """
        :param completion: the fit that completes the cut returns, or None to keep them cut
        :return: the products of every column with the returns (cached for the last ``completion``, by identity)
        """
        if self._moments is None or self._moments[0] is not completion:
            moments = np.zeros(len(self.gram))
            if self.current is not None:
                moments[: self.n_features] += self.current.moments(completion, self.n_features)
            for (weight, rollout), level_row in zip(self.remembered, self.levels, strict=True):
                block = weight * rollout.moments(completion, self.n_features)
                moments[: self.n_features] += block
                moments[self.n_features :] += block[CONSTANT] * level_row
            self._moments = (completion, moments)
        return self._moments[1]

    def solve(self, completion: Fit | None, ridge: float, size: int) -> np.ndarray | None:
        """
        The ridge fit of the first ``size`` features; under lambda-returns, the fixed point: the fit of the
        lambda-returns over its own values.

        :param completion: the fit that completes the cut returns, or None to keep them cut
        :param ridge: the penalty per sample on a standardised coefficient
        :param size: the features fitted on: the first ``size`` columns
        :return: the coefficients of the current rollout's features (the level columns left out); None where
            there is no sample
        """
        if not len(self.gram):
            return None
        if (size, ridge) not in self._factors:
            self._factors[size, ridge] = self._factor(ridge, size)
        columns, factor = self._factors[size, ridge]
        moments = th.from_numpy(self.moments(completion)[columns])
        if factor is None:  # singular: the least-squares solution
            return np.linalg.lstsq(self._matrix(columns, ridge), moments.numpy(), rcond=None)[0][:size]
        return th.linalg.lu_solve(*factor, moments[:, None])[:size, 0].numpy()

    def _factor(self, ridge: float, size: int) -> tuple[np.ndarray, tuple[th.Tensor, th.Tensor] | None]:
        """
        :return: the columns of a fit of the first ``size`` features (and the level columns), and the LU factors of its
            matrix (by torch: faster than NumPy's solve at these sizes; one factorisation for every completion the value
            iteration solves with), None where it is singular
        """
        columns = np.r_[0:size, self.n_features : len(self.gram)]
        lu, pivots, info = th.linalg.lu_factor_ex(th.from_numpy(self._matrix(columns, ridge)))
        return columns, (lu, pivots) if int(info) == 0 else None

    def _matrix(self, columns: np.ndarray, ridge: float) -> np.ndarray:
        """:return: the system's matrix on ``columns``: the Gram matrix, penalised, less the coupling"""
        gram = self.gram[np.ix_(columns, columns)]
        count = gram[CONSTANT, CONSTANT]
        means = gram[CONSTANT] / count
        variances = np.maximum(np.diag(gram) / count - means**2, 0.0)
        # a column of constant values is penalised as the least varying one that varies, so that the system stays regular
        floor = variances[variances > 1e-12 * variances.max()].min() if variances.max() > 0 else 1.0
        penalty = ridge * count * np.maximum(variances, floor)
        penalty[CONSTANT] = ridge * count * 1e-12
        gram[np.diag_indices(len(columns))] += penalty
        if self.coupling is not None:
            # the fit whose own targets it fits: (X^T X + penalty) w = X^T R + cross w
            gram -= self.coupling[np.ix_(columns, columns)]
        return gram
