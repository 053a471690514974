"""
GPG's advantage estimator, as array code that knows nothing of Stable-Baselines3: ``estimate`` turns a rollout's
arrays and the options (``GroupOptions``) into returns, baselines, advantages, which samples enter the loss and the
diagnostics. NumPy throughout, but for the knn baseline's neighbour search, a matrix product and top-k in torch. Its
pieces: ``returns`` (episode times, discounted returns, trajectories, GAE's lambda), ``binning`` and ``rollout_keys``
(which samples share a bin), ``group_baseline`` (the bins' first-visit means), ``fitted_baselines`` ("linear", "knn":
arguments and features), ``cross_fitting`` (their fits per fold), ``baseline_memory`` (the linear fit and its
memory) and ``lambda_targets`` (the linear fit on its own lambda-returns).
"""

from sb3_gpg.estimator.estimate import Estimate, estimate
from sb3_gpg.estimator.options import GROUP_OPTION_NAMES, LINEAR_KWARGS, GroupOptions

__all__ = ["GROUP_OPTION_NAMES", "LINEAR_KWARGS", "Estimate", "GroupOptions", "estimate"]
