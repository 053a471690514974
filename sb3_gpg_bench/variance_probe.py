"""
The variance probe's decomposition (``scripts/variance_probe.py``): how much of the variance of the returns from a set
of states any state baseline could explain, how much the episode time alone explains, and what the future actions'
noise leaves.
"""

import numpy as np


def decompose(returns: np.ndarray, times: np.ndarray, max_time: float, degree: int = 3) -> dict[str, float]:
    """
    One-way random-effects ANOVA of the continuations' discounted returns, and the part of it that the episode time
    explains.

    With m_i the mean of state i's K returns and w the mean within-state variance (ddof 1), the between-state variance
    is var(m_i) - w / K (var with ddof 1: the variance of a mean of K returns includes w / K of noise), the total is
    between + w. The time's part: a polynomial of ``degree`` in t / max_time (at most N - 2, so that the fit leaves a
    degree of freedom) fitted to the state means, as a regression of all N * K returns on the state's time would, its
    explained variance corrected for the fit's degrees of freedom: var(m_i) - SS_res / (N - p), p the coefficients.

    The raw estimates can fall outside [0, 1] by chance (few states or continuations); the shares are clipped:
    ``between_share`` to [0, 1], ``time_share`` to [0, between_share]; ``state_beyond_time_share`` is their difference,
    ``action_noise_share`` 1 - between_share, so that the three sum to 1.

    :param returns: discounted returns, shape (N states, K continuations), K >= 2
    :param times: the states' episode times, shape (N,)
    :param max_time: the time limit, to scale the times to [0, 1]
    :param degree: the polynomial's degree in the time
    :return: the variances (total, between, within, time; raw estimates) and the shares (raw and clipped)
    :raises ValueError: for fewer than 2 continuations per state
    """
    returns = np.asarray(returns, dtype=np.float64)
    n_states, n_continuations = returns.shape
    if n_continuations < 2:
        raise ValueError(f"the decomposition needs at least 2 continuations per state, got {n_continuations}")
    means = returns.mean(axis=1)
    within = float(returns.var(axis=1, ddof=1).mean())
    var_means = float(means.var(ddof=1)) if n_states > 1 else 0.0
    between = var_means - within / n_continuations
    total = max(between, 0.0) + within

    degree = min(degree, n_states - 2)
    time_variance = 0.0
    if degree >= 1:
        x = np.asarray(times, dtype=np.float64) / max_time
        design = np.vander(x, degree + 1)
        coefficients, *_ = np.linalg.lstsq(design, means, rcond=None)
        residual = float(((means - design @ coefficients) ** 2).sum())
        time_variance = var_means - residual / (n_states - degree - 1)

    between_raw = between / total if total > 0 else 0.0
    time_raw = time_variance / total if total > 0 else 0.0
    between_share = float(np.clip(between_raw, 0.0, 1.0))
    time_share = float(np.clip(time_raw, 0.0, between_share))
    return {
        "total_variance": total,
        "between_variance": between,
        "within_variance": within,
        "time_variance": time_variance,
        "time_degree": max(degree, 0),
        "between_share_raw": between_raw,
        "time_share_raw": time_raw,
        "between_share": between_share,
        "time_share": time_share,
        "state_beyond_time_share": between_share - time_share,
        "action_noise_share": 1.0 - between_share,
    }
