"""
The no-signal check: over the first rollouts of each ``learn`` call, the share of samples whose advantage the group
cannot inform (a baseline from a bin holding their own trajectory alone, or no baseline at all). Most of them means
settings carried over from PPO that leave GPG's group empty, which training alone would not reveal.
"""

import warnings

import numpy as np
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm

# How many rollouts the check reads, and the share of uninformed samples above which it warns
SIGNAL_CHECK_ROLLOUTS = 3
NO_SIGNAL_WARNING_SHARE = 0.5


class NoSignalCheck:
    """
    Collects the group diagnostics of the first ``SIGNAL_CHECK_ROLLOUTS`` rollouts and warns once when most samples
    got no signal from their group.
    """

    def __init__(self) -> None:
        self.rollouts: list[dict[str, float]] = []

    def record(self, group_stats: dict[str, float], model: OnPolicyAlgorithm) -> None:
        """
        :param group_stats: the group buffer's diagnostics of one rollout
        :param model: the algorithm (its rollout size, verbosity and logger)
        """
        if len(self.rollouts) < SIGNAL_CHECK_ROLLOUTS:
            self.rollouts.append(group_stats)
            if len(self.rollouts) == SIGNAL_CHECK_ROLLOUTS:
                self.warn_if_no_signal(model)

    def finish(self, model: OnPolicyAlgorithm) -> None:
        """
        At the end of a ``learn`` call: one too short for the check is checked on the rollouts it has.
        """
        if len(self.rollouts) < SIGNAL_CHECK_ROLLOUTS:
            self.warn_if_no_signal(model)

    def warn_if_no_signal(self, model: OnPolicyAlgorithm) -> None:
        """
        Warn (and log, with ``verbose >= 1``) when most samples of the rollouts so far got no signal from their group.
        """
        stats = self.rollouts
        if not stats:
            return
        # A rollout whose baselines were fitted (not the bins') informs every sample it has other trajectories for
        fitted = getattr(model, "baseline", "bins") != "bins"
        binned = [not fitted or rollout.get("fitted_baseline_fallback", 0.0) > 0 for rollout in stats]
        own = float(np.mean([rollout["own_baseline_share"] * uses for rollout, uses in zip(stats, binned, strict=True)]))
        none = float(np.mean([rollout["no_baseline_share"] * uses for rollout, uses in zip(stats, binned, strict=True)]))
        if own + none <= NO_SIGNAL_WARNING_SHARE:
            return
        trajectories = float(np.mean([rollout["n_trajectories"] for rollout in stats]))
        message = (
            f"GPG's group gives most samples no baseline: over the first {len(stats)} rollout(s), {own:.0%} of the "
            f"samples had only their own trajectory in their bin and {none:.0%} had no baseline, so their advantage is "
            f"0 (or close to it) and they teach the policy nothing. The group is n_steps x n_envs = {model.n_steps} x "
            f"{model.n_envs} samples holding {trajectories:.1f} trajectories per rollout. Fixes, in order: a longer "
            "n_steps (several episodes per env), more envs (n_envs is GPG's group size), a coarser binning ('time' or "
            "'universal'), min_bin_count=2 with leave_one_out=True. PPO settings with short rollouts do not carry "
            "over to GPG."
        )
        warnings.warn(message, UserWarning, stacklevel=4)
        if model.verbose >= 1:
            model.logger.warn(message)
