"""
The linear baseline's memory of earlier rollouts (``baseline_kwargs={"memory": K, "recency": r}``): what a rollout's
fit leaves for the next ones is its normal equations (the features' Gram matrix and their products with the returns)
and the range of its returns, so that the current rollout's baseline is fitted on the last K rollouts together with
its own other folds, in closed form, with no network and no value loss. The rollout k rollouts back weighs
``recency ** k``; the current rollout's own samples weigh 1.

Pure array code; nothing here knows of Stable-Baselines3. The memory lives in the rollout buffer, not in a saved
model: a loaded model starts with an empty memory and refills it over its first K rollouts.
"""

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np


class NormalEquations(NamedTuple):
    """
    A weighted least-squares problem's sufficient statistics, and the range of its targets.

    :param gram: ``X^T W X``
    :param moments: ``X^T W y``
    :param low: the smallest target
    :param high: the largest target
    """

    gram: np.ndarray
    moments: np.ndarray
    low: float
    high: float

    @classmethod
    def of(cls, features: np.ndarray, returns: np.ndarray) -> "NormalEquations":
        """
        :param features: one row per sample, float64
        :param returns: the return of every sample
        """
        return cls(features.T @ features, features.T @ returns, float(returns.min()), float(returns.max()))

    def plus(self, other: "NormalEquations") -> "NormalEquations":
        """:return: the problem over both sets of samples"""
        return NormalEquations(
            self.gram + other.gram, self.moments + other.moments, min(self.low, other.low), max(self.high, other.high)
        )

    def weighted(self, weight: float) -> "NormalEquations":
        """:return: the same samples, each weighing ``weight`` (the range is unchanged)"""
        return NormalEquations(weight * self.gram, weight * self.moments, self.low, self.high)


def remembered(memory: Sequence[NormalEquations], recency: float) -> NormalEquations | None:
    """
    :param memory: the earlier rollouts' normal equations, oldest first
    :param recency: the weight of the previous rollout; the one k rollouts back weighs ``recency ** k``
    :return: their weighted sum, or None for an empty memory
    """
    total = None
    for age, equations in enumerate(reversed(memory), start=1):
        weighted = equations.weighted(recency**age)
        total = weighted if total is None else total.plus(weighted)
    return total
