"""
``gae_lambda="auto"``: GAE's lambda chosen from how much of the returns the group's baselines explain.

With lambda 1 a sample's advantage is its return less its baseline: unbiased, whatever the baseline, and as noisy as
what the baseline leaves of the return, every later action's noise included. Where the baselines explain most of the
returns, little is left and lambda 1 keeps its freedom from bias; where they explain less, the advantage of an action
drowns in what follows it, and PPO's lambda (0.95, an effective horizon of some 17 steps at gamma 0.99) trades some
bias for a variance the update can read. Each rollout takes PPO's lambda while the median held-out explained
variance of the last rollouts (their baselines' out-of-fold fit, ``Estimate.stats["baseline_explained_variance"]``) is
below ``EXPLAINED_THRESHOLD``, and 1 otherwise, the first rollout included. Under PPO's lambda the baselines fit
lambda-returns over themselves, which explain less of the returns read here than a fit of the returns does: a run that
takes PPO's lambda tends to keep it, so the first rollouts' fit decides most runs. The rollouts read are the group buffer's
since its estimator state was last reset: a model loaded from a file starts over with lambda 1, as the linear
baseline's memory starts over. The linear baseline's ``optimism`` acts below lambda 1 only, and before any goal the fit
explains a constant cost's returns almost wholly: a rollout where the optimism waits for a goal (``optimism.goal_hidden``)
takes PPO's lambda, whatever the rule reads. The baselines read then are the optimistic ones, whose
bonus lowers their explained variance, which may hold lambda at PPO's a while after the goal is seen and the bonus ends.

Pure array code; nothing here knows of Stable-Baselines3.
"""

from collections.abc import Iterable

import numpy as np

AUTO_LAMBDA = "auto"
# PPO's default lambda, taken where the baselines explain too little of the returns
PPO_LAMBDA = 0.95
# The share of the returns' variance that the baselines must explain for Monte-Carlo advantages
EXPLAINED_THRESHOLD = 0.85
# The rollouts whose explained variance is read, the linear baseline's memory's length
WINDOW = 8


def chosen_lambda(explained: Iterable[float], goal_waits: bool = False) -> float:
    """
    :param explained: the held-out explained variance of each of the last rollouts (NaN where the returns did not vary
        or no sample was in the group), oldest first
    :param goal_waits: whether the linear baseline's optimism waits for a goal in the next rollout
    :return: GAE's lambda for the next rollout: ``PPO_LAMBDA`` where the optimism waits for a goal or the median of the
        last ``WINDOW`` is below ``EXPLAINED_THRESHOLD``, else 1 (where none is known too)
    """
    if goal_waits:
        return PPO_LAMBDA
    values = np.array(list(explained)[-WINDOW:], dtype=np.float64)
    values = values[~np.isnan(values)]
    return PPO_LAMBDA if len(values) and float(np.median(values)) < EXPLAINED_THRESHOLD else 1.0
