"""
GPG's own options, in one place: their names, defaults and meaning. The algorithms take them as flat keyword
arguments after PPO's (``GPG(..., binning="time")``) and hand them to the group buffers as one ``GroupOptions``; the
buffers, built alone, take them by name too. ``estimate`` reads them checked; RL Zoo's checks and search space and the
tests read them from here.
"""

import numbers
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from sb3_gpg.estimator.binning import Binning, check_binning_arguments
from sb3_gpg.estimator.fitted_baselines import BASELINE_KWARGS, BASELINES, check_baseline

TRUNCATED_RETURNS = ("keep", "mask", "bootstrap")
# The algorithms' default baseline: the linear one where the observations allow, else the bins (GroupOptions.resolved)
AUTO = "auto"
# Where the algorithms' defaults differ from the options' own (those of the paper's estimator, which a buffer or the
# estimator built alone gets): a one-word swap from PPO gets a baseline of the state where the observations allow
ALGORITHM_DEFAULTS: dict[str, Any] = {"baseline": AUTO, "truncated_returns": None}
# The linear baseline's arguments, that "auto" picks too, where baseline_kwargs do not set them: it remembers the last
# rollouts and adds random Fourier features of the observation
LINEAR_KWARGS: dict[str, Any] = BASELINE_KWARGS["linear"]
ADVANTAGE_SCALES = ("none", "bin_std")


@dataclass(frozen=True)
class GroupOptions:
    """
    Which samples share a baseline and how their advantages are formed.

    :param binning: which samples share a baseline: ``"time"`` (episode time, the paper's choice), ``"rollout_step"``
        (row in the rollout), ``"universal"`` (one bin: REINFORCE++ / GRPO), ``"spatial"`` (Round(obs / bin_size)),
        ``"spatial_time"`` (both), ``"state"`` (the observation itself, for discrete observation spaces), or a callable
        ``f(obs, t) -> keys`` with obs of shape (n_steps, n_envs, ...) (a dict of such arrays for Dict spaces), t the
        episode times (n_steps, n_envs), and one integer key per sample
    :param bin_size: epsilon of the spatial bins, one float or one value per flattened observation dimension
    :param leave_one_out: leave the sample's own trajectory out of its baseline
    :param min_bin_count: a bin holding fewer returns (other trajectories' only, under ``leave_one_out``) takes its
        baseline from the next coarser binning (spatial_time -> time -> universal; others -> universal); where even
        universal holds too few, the advantage is 0
    :param truncated_returns: None (the algorithms' default): ``"bootstrap"`` under a fitted baseline, ``"keep"``
        under the bins; ``"keep"`` uses returns cut by the rollout's end as they are (as in the paper);
        ``"mask"`` leaves those samples out of the bins and out of the loss; ``"bootstrap"`` completes them with the
        group's estimate of what follows: ``gamma**k`` times the value of the env's next state, k steps after the
        sample, where the value is the mean first-visit return, among the rollout's complete (not cut) returns, of the
        next state's bin (with ``min_bin_count`` and the fallbacks; 0 where no level has enough), or the fitted
        baseline's, fitted per fold on the other folds (``cross_fitting``: the linear one by value iteration over their
        cut returns and its memory, knn on their complete returns)
    :param advantage_scale: ``"none"``, or ``"bin_std"``: every advantage is divided by the standard deviation of the
        first-visit returns of the bin its baseline came from (the next coarser bin's where that one holds fewer than
        two returns or no spread; 1 where none has), before the per-minibatch normalisation of ``normalize_advantage``
    :param baseline: ``"auto"`` (the algorithms' default): ``"linear"`` where the observations give it features (a
        Box, or a Dict's Box parts, no images) and the binning is the time's, else ``"bins"`` (``resolved``);
        ``"bins"`` (the mean first-visit return of the sample's bin: with the other defaults, the paper's estimator),
        or a baseline fitted per rollout to the group's returns on the observation and the episode time, cross-fitted
        so that no trajectory's returns enter its own baseline, its bootstrap included: ``"linear"`` (ridge regression
        on a cubic in the time, the clipped observation or its random projection, their squares and random Fourier
        features, fitted together with the last rollouts) or ``"knn"`` (mean return of the nearest samples of other
        trajectories); see ``fitted_baselines`` and ``cross_fitting``
    :param baseline_kwargs: the fitted baseline's arguments, each given one replacing its default
        (``fitted_baselines.BASELINE_KWARGS``; ``LINEAR_KWARGS`` for the linear one): ``n_folds`` (both), ``ridge``
        (linear: the penalty per sample on a standardised coefficient), ``memory``, ``recency`` and ``memory_weight``
        (linear: the last ``memory`` rollouts enter the fit, the one k rollouts back weighing ``recency ** k``,
        together at most ``memory_weight`` times as much as the current rollout, None: no cap; ``baseline_memory``),
        ``level`` (linear: ``"own"``, each remembered rollout's returns at a level of their own; ``"trend"``, the
        rollouts' levels on a line in their age; ``"pooled"``, one level for all; ``baseline_memory.LEVELS``),
        ``pooled_memory`` and ``pooled_recency`` (linear, 0: off; each fold also tries one level for the last
        ``pooled_memory`` rollouts, weighing ``pooled_recency ** k`` uncapped, and takes it where its held-out halves'
        returns say it predicts better, or with ``pooled_choice="previous"`` every fold with two halves takes the
        candidate whose folds predicted the previous rollout's returns best; ``cross_fitting``), ``fourier``,
        ``fourier_scale`` and ``fourier_seed`` (linear: random Fourier features of the observation; None: a seed drawn
        from the model's), ``choose_size`` (linear: each fold chooses how many of the features it fits on held-out
        halves of its training trajectories; False: all of them), ``optimism`` (linear, True by default: while every
        step costs the same and no episode has found the goal (under ``gae_lambda="auto"``: or since then 16 episodes in
        a row have run to the limit), the baselines are raised where the fit has seen few samples, for lambda-returns to
        read as a critic's initial optimism; ``optimism``), ``target`` (linear: ``"auto"``, its own lambda-returns with
        GAE's lambda where that is below 1, as PPO's critic, and the returns at 1; ``"returns"``; or
        ``"lambda_returns"``; ``lambda_targets``), ``n_neighbors`` and ``max_samples`` (knn).
        ``{"memory": 0, "fourier": 0}`` fits each rollout alone on rllab's features
    """

    binning: Binning = "time"
    bin_size: float | Sequence[float] | np.ndarray = 1.0
    leave_one_out: bool = False
    min_bin_count: int = 1
    truncated_returns: str | None = "keep"
    advantage_scale: str = "none"
    baseline: str = "bins"
    baseline_kwargs: dict[str, Any] | None = None

    @classmethod
    def from_kwargs(cls, owner: str, kwargs: dict[str, Any]) -> "GroupOptions":
        """
        :param owner: the class the options were given to, for the error
        :param kwargs: keyword arguments that must all be options
        :return: the options, defaults filled in
        :raises TypeError: naming an unknown argument and the options there are, as Python does for a constructor
        """
        check_option_names(owner, kwargs)
        return cls(**{**ALGORITHM_DEFAULTS, **kwargs})

    def checked(self, obs_dim: int | None = None, rollout_buffer_kwargs: dict[str, Any] | None = None) -> "GroupOptions":
        """
        :param obs_dim: number of flattened observation dimensions, to check a per-dimension ``bin_size`` against
        :param rollout_buffer_kwargs: an algorithm's other buffer arguments, which must not repeat these options
        :return: the options as ``estimate`` reads them: ``bin_size`` as a float64 array, ``min_bin_count`` an int,
            ``baseline_kwargs`` with their defaults
        :raises ValueError: naming the option that is wrong and what it accepts
        """
        clashing = sorted(set(rollout_buffer_kwargs or {}) & set(GROUP_OPTION_NAMES))
        if clashing:
            raise ValueError(f"Pass {', '.join(clashing)} to the algorithm directly, not in rollout_buffer_kwargs.")
        if self.baseline != AUTO and self.baseline not in BASELINES:
            raise ValueError(f"baseline must be one of {(AUTO, *BASELINES)}, got {self.baseline!r}.")
        # "auto" is made concrete where the observation space is known (resolved): checked as the linear baseline
        checked_kwargs = check_baseline("linear" if self.baseline == AUTO else self.baseline, self.baseline_kwargs)
        baseline_kwargs = self.baseline_kwargs if self.baseline == AUTO else checked_kwargs
        bin_size = check_binning_arguments(self.binning, self.bin_size, self.min_bin_count, obs_dim)
        if not isinstance(self.leave_one_out, (bool, np.bool_, numbers.Integral)) or self.leave_one_out not in (0, 1):
            # "no" or None would read as true or false
            raise ValueError(f"leave_one_out must be True or False, got {self.leave_one_out!r}.")
        if self.truncated_returns is not None and self.truncated_returns not in TRUNCATED_RETURNS:
            raise ValueError(f"truncated_returns must be one of {TRUNCATED_RETURNS}, got {self.truncated_returns!r}.")
        if self.advantage_scale not in ADVANTAGE_SCALES:
            raise ValueError(f"advantage_scale must be one of {ADVANTAGE_SCALES}, got {self.advantage_scale!r}.")
        return replace(self, bin_size=bin_size, min_bin_count=int(self.min_bin_count), baseline_kwargs=baseline_kwargs)

    def resolved(self, features: bool) -> "GroupOptions":
        """
        :param features: whether the observations give the fitted baselines features (Box values, no images)
        :return: the options with ``baseline="auto"`` and ``truncated_returns=None`` made concrete
        :raises ValueError: for ``baseline_kwargs`` under an ``"auto"`` baseline that comes out as the bins
        """
        baseline = self.baseline
        if baseline == AUTO:
            baseline = "linear" if features and self.binning == "time" else "bins"
            if baseline == "bins" and self.baseline_kwargs:
                raise ValueError(
                    f"baseline_kwargs {self.baseline_kwargs} are the fitted baseline's, but baseline='auto' uses the bins "
                    f"here (binning={self.binning!r}, or observations without Box features): pass baseline='linear' "
                    "with features it can read, or no baseline_kwargs."
                )
        truncated_returns = self.truncated_returns
        if truncated_returns is None:
            truncated_returns = "keep" if baseline == "bins" else "bootstrap"
        return replace(self, baseline=baseline, truncated_returns=truncated_returns)

    @property
    def linear_optimism(self) -> bool:
        """Whether the baseline is the linear one with its ``optimism`` on (of options checked and resolved)"""
        return self.baseline == "linear" and bool((self.baseline_kwargs or {})["optimism"])

    def as_kwargs(self) -> dict[str, Any]:
        """
        :return: the options as keyword arguments (of the algorithms and the group buffers)
        """
        return {field.name: getattr(self, field.name) for field in fields(self)}


GROUP_OPTION_NAMES = tuple(field.name for field in fields(GroupOptions))
# The paper's estimator: the options' own defaults where the algorithms' differ (the time bins, cut returns kept)
PAPER_ESTIMATOR = {field.name: field.default for field in fields(GroupOptions) if field.name in ALGORITHM_DEFAULTS}


def check_option_names(owner: str, kwargs: dict[str, Any]) -> None:
    """
    :param owner: the class the keyword arguments were given to, for the error
    :param kwargs: keyword arguments that must all be GPG's options
    :raises TypeError: naming an unknown argument and the options there are, as Python does for a constructor
    """
    unknown = sorted(set(kwargs) - set(GROUP_OPTION_NAMES))
    if unknown:
        raise TypeError(
            f"{owner}.__init__() got unexpected keyword argument(s) {', '.join(map(repr, unknown))}: it takes PPO's "
            f"arguments and GPG's own options {', '.join(GROUP_OPTION_NAMES)}."
        )
