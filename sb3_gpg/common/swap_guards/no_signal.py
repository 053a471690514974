"""
The no-signal checks. Over the first rollouts of each ``learn`` call, the share of samples whose advantage the group
cannot inform (a baseline from a bin holding their own trajectory alone, or no baseline at all): most of them means
settings carried over from PPO that leave GPG's group empty, which training alone would not reveal. At any point of
training, rollouts in a row whose every advantage is 0, or under a fitted baseline whose held-out fit explains all but
the noise of the returns: no trajectory of the group did better than another (a sparse reward never reached), or no
episode ended inside the rollouts (every return cut by their end, nothing to compare), so the policy is not updated at
all, or only by noise.
"""

import warnings
from collections import deque

import numpy as np
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm

# How many rollouts the check reads, and the share of uninformed samples above which it warns
SIGNAL_CHECK_ROLLOUTS = 3
NO_SIGNAL_WARNING_SHARE = 0.5
# How many rollouts in a row with every advantage 0 make the check warn
FLAT_ROLLOUTS_WARNING = 10
# A fitted baseline that explains this much of the returns held out leaves advantages that are its fit's noise alone
# (returns that depend on the episode time only: every trajectory got the same return where it was compared)
FLAT_EXPLAINED_VARIANCE = 0.999


class NoSignalWarning(UserWarning):
    """
    GPG's group gives most samples no baseline, or rollouts in a row give no sample a signal (a ``UserWarning``, so
    that it can be filtered or made an error).
    """


class NoSignalCheck:
    """
    Collects the group diagnostics of the first ``SIGNAL_CHECK_ROLLOUTS`` rollouts and warns once when most samples
    got no signal from their group; counts the rollouts in a row whose advantages are all 0 and, every
    ``FLAT_ROLLOUTS_WARNING`` of them, warns of their cause (every return cut by the rollout's end, or equal returns)
    where this ``learn`` call has not yet.
    """

    def __init__(self) -> None:
        self.rollouts: list[dict[str, float]] = []
        self.flat_in_a_row = 0
        # whether each of the run's last flat rollouts had every return cut by its end (no episode ended inside it)
        self.recent_cut: deque[bool] = deque(maxlen=FLAT_ROLLOUTS_WARNING)
        # the causes warned about in this learn call
        self.warned: set[str] = set()

    def record(self, group_stats: dict[str, float], model: OnPolicyAlgorithm) -> None:
        """
        :param group_stats: the group buffer's diagnostics of one rollout
        :param model: the algorithm (its rollout size, verbosity and logger)
        """
        if len(self.rollouts) < SIGNAL_CHECK_ROLLOUTS:
            self.rollouts.append(group_stats)
            if len(self.rollouts) == SIGNAL_CHECK_ROLLOUTS:
                self.warn_if_no_signal(model)
        buffer = model.rollout_buffer
        fitted = getattr(buffer, "baseline", "bins") != "bins"
        fitted_flat = fitted and getattr(buffer, "explained_variance", np.nan) >= FLAT_EXPLAINED_VARIANCE
        cut = group_stats.get("truncated_share", 0.0) >= 1.0
        # "mask" leaves every cut sample out of the group and the loss: no advantage at all
        masked_out = cut and getattr(buffer, "truncated_returns", "keep") == "mask"
        if group_stats["zero_advantage_share"] >= 1.0 or fitted_flat or masked_out:
            self.flat_in_a_row += 1
            self.recent_cut.append(cut)
        else:
            self.flat_in_a_row = 0
            self.recent_cut.clear()
        if self.flat_in_a_row == 0 or self.flat_in_a_row % FLAT_ROLLOUTS_WARNING:
            return
        # the cause of the last FLAT_ROLLOUTS_WARNING flat rollouts, warned about once per learn call
        cause = "cut" if sum(self.recent_cut) > FLAT_ROLLOUTS_WARNING / 2 else "equal"
        if cause in self.warned:
            return
        self.warned.add(cause)
        start = (
            f"GPG has had no signal for {self.flat_in_a_row} rollouts in a row ({model.num_timesteps} steps so far): "
            "every advantage was 0 (or the fitted baseline's noise: it explained 99.9% of the returns held out), "
        )
        if cause == "cut":
            reason = (
                f"because no episode ended inside most of them: every return was cut by the rollout's end "
                f"(n_steps={model.n_steps} steps per env, shorter than the episodes now), so no complete return "
                "was there to compare the samples with, or to complete the cut ones from, and the policy is not "
                "being updated. Fix: an n_steps longer than the episodes (several episodes per env and rollout): "
                "GPG's bootstrap needs complete returns inside the rollout."
            )
        else:
            reason = (
                "because every trajectory of the group got the same return where it was "
                "compared (a sparse reward never reached, or episodes that all end alike), so the policy is not being "
                "updated. Fixes: for low-dimensional observations, a baseline blind to the episode time with "
                "lambda-returns over it (VecNormalize, binning='spatial', gae_lambda=0.95), which rewards reaching "
                "states whose returns are higher before any trajectory reaches the goal, as a critic does; more "
                "exploration (ent_coef, log_std_init or use_sde for continuous actions), a larger group (n_envs), a "
                "longer n_steps, or a shaped reward."
            )
        self.warn(start + reason, model)

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
        self.warn(message, model)

    @staticmethod
    def warn(message: str, model: OnPolicyAlgorithm) -> None:
        """
        :param message: what to say, as a ``NoSignalWarning`` and, with ``verbose >= 1``, in the logger
        :param model: the algorithm
        """
        warnings.warn(message, NoSignalWarning, stacklevel=5)
        if model.verbose >= 1:
            model.logger.warn(message)
