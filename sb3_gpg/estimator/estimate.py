"""
GPG's advantage estimation of one rollout, from the arrays a rollout buffer holds to what the loss reads: the returns
(kept, masked or completed where the rollout's end cut them), the baselines (the group's bins or a fitted baseline),
the advantages (returns minus baselines, or GAE's lambda-return over them; scaled by the bins' spread), which samples
enter the loss, and the group's diagnostics. Pure array code; nothing here knows of Stable-Baselines3.

Arrays are step-major, shape (n_steps, n_envs, ...), as SB3's rollout buffers store them; observations may be a dict
of such arrays (Dict spaces).
"""

import time
from collections.abc import Generator, Sequence
from typing import Any, NamedTuple

import numpy as np

from sb3_gpg.estimator.baseline_memory import BaselineMemory, Equations, Fit
from sb3_gpg.estimator.binning import Binning, binning_levels
from sb3_gpg.estimator.cross_fitting import FittedEstimate, Samples, fitted_estimate
from sb3_gpg.estimator.fitted_baselines import knn_features, linear_features, remembered_rollouts, trajectory_order
from sb3_gpg.estimator.group_baseline import advantage_stats, group_baselines, group_bootstrap
from sb3_gpg.estimator.lambda_targets import lambda_terms, selected
from sb3_gpg.estimator.optimism import GoalReading, goal_hidden, novelty, read_goal
from sb3_gpg.estimator.options import AUTO, GroupOptions
from sb3_gpg.estimator.returns import (
    completed_returns,
    discounted_returns,
    env_major,
    lambda_advantages,
    trajectory_ids,
)
from sb3_gpg.estimator.rollout_keys import OBSERVATION_BINNINGS, box_observations, rollout_bin_keys


class Estimate(NamedTuple):
    """
    GPG's estimate of one rollout. The returns, baselines and advantages are float32, as SB3's buffers store them:
    later steps read the rounded values, so that a buffer holding them computes the same.

    :param returns: discounted return of every sample (completed after the cut under ``truncated_returns="bootstrap"``),
        shape (n_steps, n_envs)
    :param baselines: baseline of every sample (its return outside the group: advantage 0)
    :param advantages: advantage of every sample, 0 outside the group
    :param in_loss: which samples enter the loss, env-major (as ``RolloutBuffer.get`` flattens); None when all do
    :param explained_variance: how much of the returns the baselines explain over the samples in the loss (nan where
        none is, or the returns do not vary)
    :param stats: the group's diagnostics (see ``group_baselines``, ``advantage_stats``), the share of cut returns,
        where the rollout's end weighs (``_rollout_end_weight``), the bootstrap's, the held-out (out-of-fold) explained
        variance, whether a fitted baseline fell back to the bins, and the time the estimate took
    :param memory_entry: the linear baseline's statistics of this rollout, for its memory (``BaselineMemory``)
    :param last_fit: the linear baseline's fit, where the next rollout's value iteration starts
    """

    returns: np.ndarray
    baselines: np.ndarray
    advantages: np.ndarray
    in_loss: np.ndarray | None
    explained_variance: float
    stats: dict[str, float]
    memory_entry: Equations | None = None
    last_fit: Fit | None = None


class _Rollout(NamedTuple):
    """What the bins and the fitted baselines read of a rollout (see ``estimate`` for the fields)."""

    observations: Any
    episode_times: np.ndarray
    options: GroupOptions
    feature_keys: Sequence[str | None]
    rewards: np.ndarray
    episode_starts: np.ndarray
    last_dones: np.ndarray

    def bin_keys(self, binning: Binning, next_obs: Any = None, next_times: np.ndarray | None = None) -> np.ndarray:
        """
        :return: the bin key of every sample, shape (n_steps, n_envs), or (n_steps + 1, n_envs) with the keys of the
            states after the rollout (see ``rollout_bin_keys``)
        """
        bin_size = np.asarray(self.options.bin_size)
        return rollout_bin_keys(binning, self.observations, self.episode_times, bin_size, next_obs, next_times)

    def level_keys(self, in_group: np.ndarray) -> Generator[np.ndarray, None, None]:
        """
        :return: the bin keys of the group's samples (env-major), per binning level, finest first, computed lazily
        """
        for level in binning_levels(self.options.binning):
            yield env_major(self.bin_keys(level))[in_group]

    def features(self, observations: Any, times: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
        """
        :param observations: observations with one leading row per sample (a dict of such arrays for Dict spaces)
        :param times: their episode times
        :param order: the row of the result that each sample's features go to; None: the samples' order
        :return: the fitted baseline's features (see ``fitted_baselines``), before the knn's standardisation
        """
        flat_obs = box_observations(observations, self.feature_keys, len(times))
        if self.options.baseline == "knn":
            features = knn_features(flat_obs, times)
            return features if order is None else features[np.argsort(order)]
        kwargs = self.options.baseline_kwargs or {}
        return linear_features(flat_obs, times, kwargs["fourier"], kwargs["fourier_scale"], kwargs["fourier_seed"], order)

    def sample_features(self) -> np.ndarray:
        """
        :return: the fitted baseline's features of every sample of the rollout, env-major (computed step-major, on
            a view of the observations, each row placed where it goes)
        """
        n_steps, n_envs = self.episode_times.shape
        env_major_row = np.arange(n_envs)[None, :] * n_steps + np.arange(n_steps)[:, None]
        return self.features(self.observations, self.episode_times.reshape(-1), env_major_row.reshape(-1))


def estimate(
    observations: Any,
    rewards: np.ndarray,
    episode_starts: np.ndarray,
    last_dones: np.ndarray,
    last_obs: Any = None,
    *,
    episode_times: np.ndarray,
    options: GroupOptions,
    gamma: float,
    gae_lambda: float = 1.0,
    feature_keys: Sequence[str | None] = (None,),
    memory: BaselineMemory | None = None,
) -> Estimate:
    """
    Monte-Carlo returns, group baselines and advantages of a rollout.

    :param observations: the observations, shape (n_steps, n_envs, ...), or a dict of such arrays
    :param rewards: reward of every step, shape (n_steps, n_envs)
    :param episode_starts: whether each step starts an episode (the flags ``RolloutBuffer.add`` takes)
    :param last_dones: whether each env's last step ended its episode, shape (n_envs,)
    :param last_obs: the observation after the rollout, one row per env, as the rollout's observations are stored;
        needed by ``truncated_returns="bootstrap"`` with a binning that reads observations or a fitted baseline
    :param episode_times: steps since each sample's episode began, shape (n_steps, n_envs), carried across rollouts
        by the caller; the step after the rollout is at ``episode_times[-1] + 1``
    :param options: GPG's options, resolved and checked (``GroupOptions.resolved``, ``GroupOptions.checked``)
    :param gamma: discount factor
    :param gae_lambda: GAE's lambda over the baselines; 1: advantages are returns minus baselines
    :param feature_keys: for Dict observations, the keys the fitted baselines read (the Box parts)
    :param memory: the linear baseline's memory of earlier rollouts (their ``memory_entry`` and the last
        ``last_fit``), fitted on together with this rollout's own samples; read, not changed
    :return: the estimate
    :raises ValueError: for a bootstrap that needs ``last_obs`` without it
    """
    if options.baseline == AUTO or options.truncated_returns is None:
        raise ValueError(
            "estimate takes resolved options (GroupOptions.resolved): baseline='auto' and truncated_returns=None "
            "depend on the observation space."
        )
    start = time.perf_counter()
    n_steps, n_envs = rewards.shape
    last_dones = np.asarray(last_dones, dtype=bool).reshape(n_envs)
    rollout = _Rollout(observations, episode_times, options, feature_keys, rewards, episode_starts, last_dones)
    discounted, cut = discounted_returns(rewards, episode_starts, last_dones, gamma)
    ids = trajectory_ids(episode_starts)
    bootstrap = options.truncated_returns == "bootstrap"
    if bootstrap and cut[-1].any():
        _check_last_obs(options, last_obs)
    # Samples in the group: all, or under "mask" those whose returns the rollout's end did not cut
    in_group = ~env_major(cut) if options.truncated_returns == "mask" else np.ones(cut.size, dtype=bool)
    fitted = None
    raised = False
    if options.baseline != "bins":
        longest, seen_before = (memory.longest_episode, memory.goal_seen) if memory is not None else (0, False)
        goal = read_goal(rewards, episode_starts, episode_times, last_dones, longest)
        optimistic = options.linear_optimism and gae_lambda < 1.0 and goal_hidden(rewards, goal.seen, seen_before)
        fitted, raised = _fitted(
            rollout, discounted, cut, ids, in_group, last_obs, gamma, gae_lambda, bootstrap, memory, goal, optimistic
        )
    fits = fitted is not None and fitted.baselines is not None
    # the bootstrap's diagnostics, where it runs
    bootstrap_stats = {"bootstrapped_share": 0.0, "bootstrap_mean": 0.0} if bootstrap else {}
    values_at_cut = np.zeros(n_envs)
    if fitted is not None and fits:
        flat_returns = env_major(discounted)
        flat_returns[in_group] = fitted.returns
        step_returns = flat_returns.reshape(n_envs, n_steps).T.astype(np.float32)
        if bootstrap and cut[-1].any():
            values_at_cut, bootstrap_stats = _cut_values_and_stats(cut, fitted.values_at_cut[cut[-1]], fitted.found[cut[-1]])
    else:
        step_returns = discounted.astype(np.float32)
        if bootstrap and cut[-1].any():
            values, found = _bins_values_at_cut(rollout, step_returns, cut, ids, last_obs)
            values_at_cut, bootstrap_stats = _cut_values_and_stats(cut, values, found)
            step_returns = completed_returns(step_returns, cut, values_at_cut, gamma).astype(np.float32)
    returns = env_major(step_returns)
    # The bins' baselines, and for the held-out diagnostic where the baselines are the bins', those without the
    # sample's own trajectory (the same under leave_one_out)
    baselines, scales, stats, held_out = group_baselines(
        rollout.level_keys(in_group),
        ids[in_group],
        returns[in_group],
        options.leave_one_out,
        options.min_bin_count,
        scale_by_bin_std=options.advantage_scale == "bin_std",
        held_out=not fits,
    )
    if fitted is not None and fitted.baselines is not None:
        baselines = held_out = fitted.baselines
    assert held_out is not None, "group_baselines gives the held-out baselines where asked"

    flat_baselines = returns.astype(np.float64)  # samples outside the group get advantage 0
    flat_baselines[in_group] = baselines
    step_baselines = flat_baselines.reshape(n_envs, n_steps).T.astype(np.float32)
    if gae_lambda == 1.0 and options.advantage_scale == "none":
        advantages = step_returns - step_baselines
    else:
        # In float64 before any division: the float32 difference of a return and its rounded baseline would be
        # scaled up with the rest
        flat_advantages = returns - flat_baselines
        if gae_lambda != 1.0:
            step_major = flat_baselines.reshape(n_envs, n_steps).T
            flat_advantages = env_major(
                lambda_advantages(rewards, step_major, episode_starts, last_dones, values_at_cut, gamma, gae_lambda)
            )
            flat_advantages[~in_group] = 0.0
        flat_advantages[in_group] /= scales
        advantages = flat_advantages.reshape(n_envs, n_steps).T.astype(np.float32)
    # How much of the returns the baselines explain, over the samples in the loss
    explained = _explained_variance(env_major(step_baselines)[in_group], returns[in_group]) if in_group.any() else np.nan
    held_out_variance = _explained_variance(held_out, returns[in_group]) if in_group.any() else np.nan
    stats = {
        **stats,
        **advantage_stats(ids[in_group], returns[in_group], baselines),
        "truncated_share": float(cut.mean()),
        **_rollout_end_weight(advantages, in_group, gamma * gae_lambda),
        **bootstrap_stats,
        "baseline_explained_variance": held_out_variance,
        "fitted_baseline_fallback": float(options.baseline != "bins" and not fits),
        **({"optimism_raised": float(raised)} if options.linear_optimism else {}),
        **({"fit_size": fitted.fit_size} if options.baseline == "linear" and fitted is not None and fits else {}),
        **({"pooled_share": fitted.pooled_share} if fitted is not None and fits and not np.isnan(fitted.pooled_share) else {}),
        "advantage_time": time.perf_counter() - start,
    }
    in_loss = None if in_group.all() else in_group
    memory_entry = last_fit = None
    remembers = options.baseline == "linear" and remembered_rollouts(options.baseline_kwargs) > 0
    if fitted is not None and remembers and in_group.any():
        memory_entry, last_fit = fitted.memory_entry, fitted.last_fit
    return Estimate(step_returns, step_baselines, advantages, in_loss, explained, stats, memory_entry, last_fit)


def _rollout_end_weight(advantages: np.ndarray, in_group: np.ndarray, discount: float) -> dict[str, float]:
    """
    Where the rollout's end weighs in the update: returns that it cuts, scored as if the episode ended there, are off
    most in each env's last effective horizon of rows, so that these rows hold far more of the advantages' squares than
    of the samples.

    :param advantages: the advantages, shape (n_steps, n_envs)
    :param in_group: which samples (env-major) enter the loss
    :param discount: ``gamma * gae_lambda``, whose effective horizon ``1 / (1 - discount)`` (rounded, at most the
        rollout) sets the rows
    :return: ``end_advantage_share``, the share of the advantages' sum of squares over the samples in the loss held by
        those rows (0 where all advantages are 0), and ``end_sample_share``, the share of the samples in them
    """
    n_steps = len(advantages)
    end_rows = n_steps if discount >= 1.0 else min(n_steps, round(1.0 / (1.0 - discount)))
    # each sample's rollout row (samples are env-major, as in _fitted_baselines)
    at_end = np.flatnonzero(in_group) % n_steps >= n_steps - end_rows
    squares = env_major(advantages).astype(np.float64)[in_group] ** 2
    total = squares.sum()
    return {
        "end_advantage_share": float(squares[at_end].sum() / total) if total > 0 else 0.0,
        "end_sample_share": float(at_end.mean()) if at_end.size else 0.0,
    }


def _explained_variance(predictions: np.ndarray, targets: np.ndarray) -> float:
    """
    :return: ``1 - Var[targets - predictions] / Var[targets]`` (nan where the targets do not vary), as SB3 computes it
    """
    variance = np.var(targets)
    return float("nan") if variance == 0 else float(1 - np.var(targets - predictions) / variance)


def _check_last_obs(options: GroupOptions, last_obs: Any) -> None:
    """
    :raises ValueError: for a bootstrap that reads the observation after the rollout without it
    """
    if last_obs is None and (
        callable(options.binning) or options.binning in OBSERVATION_BINNINGS or options.baseline != "bins"
    ):
        raise ValueError(
            f"truncated_returns='bootstrap' with {options.binning} binning and baseline={options.baseline!r} reads the "
            "observation after the rollout: pass it as compute_returns_and_advantage(..., last_obs=...)."
        )


def _fitted(
    rollout: _Rollout,
    discounted: np.ndarray,
    cut: np.ndarray,
    ids: np.ndarray,
    in_group: np.ndarray,
    last_obs: Any,
    gamma: float,
    gae_lambda: float,
    bootstrap: bool,
    memory: BaselineMemory | None,
    goal: GoalReading,
    optimistic: bool,
) -> tuple[FittedEstimate | None, bool]:
    """
    :param discounted: the returns within the rollout, shape (n_steps, n_envs)
    :param cut: which of them the rollout's end cut
    :param ids: trajectory of every sample, env-major
    :param in_group: which samples (env-major) are in the group
    :param bootstrap: whether the cut returns are completed
    :param goal: what the rollout's episode ends say of the goal (kept with its memory entry)
    :param optimistic: whether the baselines (and the values after the rollout) are raised by their novelty
        (``optimism``), in units of the returns' spread
    :return: the fitted baseline's cross-fitted estimate of the group's samples (``cross_fitting``); without
        baselines (or None for knn) when the group holds a single trajectory and no memory (the bins' are used then);
        and whether the optimism raised its baselines
    """
    options = rollout.options
    baseline_kwargs = options.baseline_kwargs or {}
    n_steps, n_envs = discounted.shape
    features = rollout.sample_features()
    completes_cut = bootstrap and bool(cut[-1].any())
    lambdas = None
    if options.baseline == "linear" and baseline_kwargs["target"] != "returns" and gae_lambda < 1.0:
        lambdas = lambda_terms(
            features, rollout.rewards, rollout.episode_starts, rollout.last_dones, completes_cut, gamma, gae_lambda
        )
    if not in_group.all():
        features, lambdas = features[in_group], selected(lambdas, in_group)
    # each sample's rollout row and env (samples are env-major: n_steps rows of one env, then the next env's)
    rows, envs = np.flatnonzero(in_group) % n_steps, np.flatnonzero(in_group) // n_steps
    discounts = np.zeros(len(rows))
    if completes_cut:
        discounts = np.where(env_major(cut)[in_group], gamma ** (n_steps - rows), 0.0)
        cut_features = rollout.features(last_obs, rollout.episode_times[-1] + 1)
    else:
        cut_features = np.zeros((n_envs, features.shape[1]))
    # trajectories dealt to folds in turn, by rounds
    order = trajectory_order(ids[in_group], rows)
    folds = rounds = None
    if order is not None:
        n_folds = min(baseline_kwargs["n_folds"], int(order.max()) + 1)
        folds, rounds = order % n_folds, order // n_folds % 2
    samples = Samples(
        features,
        env_major(discounted)[in_group],
        discounts,
        envs,
        cut_features,
        np.zeros(len(rows)) if rounds is None else rounds,
        lambdas,
    )
    if options.baseline != "linear":
        memory = None
    fitted = fitted_estimate(options.baseline, samples, folds, memory, bootstrap, **baseline_kwargs)
    if fitted is not None and fitted.memory_entry is not None:
        entry = fitted.memory_entry._replace(
            goal_seen=goal.seen, longest_episode=int(rollout.episode_times.max()), limits_after_goal=goal.limits_after
        )
        fitted = fitted._replace(memory_entry=entry)
    if not (optimistic and fitted is not None and fitted.baselines is not None and fitted.memory_entry is not None):
        return fitted, False
    recent = memory.recent(baseline_kwargs["memory"]) if memory is not None else []
    grams = [fitted.memory_entry.gram, *(rollout.gram for rollout in recent)]
    # the states after the rollout are scored where they complete cut returns (else their features are zeros)
    queries = cut_features if bootstrap and cut[-1].any() else cut_features[:0]
    bonus = float(np.std(fitted.returns)) * np.sqrt(
        novelty(np.concatenate([features, queries]), grams, baseline_kwargs["ridge"])
    )
    values_at_cut = fitted.values_at_cut.copy()
    values_at_cut[: len(queries)] += np.where(fitted.found[: len(queries)], bonus[len(features) :], 0.0)
    return fitted._replace(baselines=fitted.baselines + bonus[: len(features)], values_at_cut=values_at_cut), True


def _bins_values_at_cut(
    rollout: _Rollout, returns: np.ndarray, cut: np.ndarray, ids: np.ndarray, last_obs: Any
) -> tuple[np.ndarray, np.ndarray]:
    """
    The bins' value of each cut env's state after the rollout: ``group_bootstrap`` over the complete returns.

    :param returns: the returns, shape (n_steps, n_envs)
    :param cut: which samples' returns the rollout's end cut, shape (n_steps, n_envs)
    :param ids: trajectory of every sample, env-major
    :return: the value of each cut env's state after the rollout, and whether it has one
    """
    options = rollout.options
    cut_envs = cut[-1]  # an env's cut trajectory is its last one
    complete = ~env_major(cut)
    next_times = rollout.episode_times[-1] + 1

    def level_keys():
        for level in binning_levels(options.binning):
            keys = rollout.bin_keys(level, last_obs, next_times)
            yield env_major(keys[:-1])[complete], keys[-1][cut_envs]

    return group_bootstrap(level_keys(), ids[complete], env_major(returns)[complete], options.min_bin_count)


def _cut_values_and_stats(cut: np.ndarray, values: np.ndarray, found: np.ndarray) -> tuple[np.ndarray, dict[str, float]]:
    """
    :param values: the value of each cut env's state after the rollout
    :param found: whether each has one
    :return: the value after the rollout of every env (0 where none), and the bootstrap's diagnostics
    """
    cut_envs = cut[-1]
    at_cut = np.zeros(len(cut_envs))
    at_cut[cut_envs] = values
    completed_envs = np.zeros(len(cut_envs), dtype=bool)
    completed_envs[np.flatnonzero(cut_envs)[found]] = True
    return at_cut, {
        "bootstrapped_share": float(np.mean(cut & completed_envs)),
        "bootstrap_mean": float(values[found].mean()) if found.any() else 0.0,
    }
