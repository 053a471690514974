"""
The linear baseline's optimism where a constant cost per step hides the goal. Until some trajectory reaches the goal of
a task that costs the same every step (MountainCar's or Acrobot's -1), every return is the time left times that cost:
the returns say nothing, and GAE's lambda-returns over a baseline that fits them give advantages that are its noise.
A critic starts elsewhere: initialised near 0, above every such return, it keeps its highest values where it has been
fitted least, and its lambda-returns favour actions that lead there, which is how PPO first reaches such a goal. The
linear baseline gets that start from its own statistics: in such a rollout each sample's baseline is raised by its
novelty, how little of the fit's samples (the rollout's and the remembered ones') its features resemble, read by
lambda-returns as the critic's optimism is; with lambda 1 a baseline's differences cancel, and nothing is raised.

An episode finds the goal where it ends before the longest episode time seen in its rollout or any earlier one (a
single env's rollout may hold no episode longer than the one that finds it), or where the envs' rewards differ at a
step. A rollout short against the episodes may hold no episode's end at all: the goal counts as unseen only where
neither the rollout nor an earlier one that the memory took found it (a rollout whose cost moved more, VecNormalize's
first steps, did not), however short the memory: once found, a goal's returns carry the signal, and the raised
baselines would only move the policy off it. But a random policy's episode may find it by chance (Acrobot's, in the
first rollouts), after which every episode may run to the limit again, with returns that the time alone explains.
Under a given lambda below 1 the lambda-returns over the fit still read that episode's better return; under
``gae_lambda="auto"`` the fit explains those returns, "auto" takes lambda 1, and their Monte-Carlo advantages carry
nothing: there (``BaselineMemory``'s ``goal_lapses``) a goal counts as seen until ``LAPSE_EPISODES`` episodes in a row
after it, in the order they end, have run to the limit, however many rollouts that takes.

Pure array code; nothing here knows of Stable-Baselines3 (torch's linear algebra, which keeps to torch's threads).
"""

from typing import NamedTuple

import numpy as np
import torch as th

# One cost per step: the same reward on every env at each step, up to a scale that moves by at most this share from one
# step to the next (VecNormalize's, which divides every env's reward by one running scale)
SCALE_DRIFT = 1e-2
# Under gae_lambda="auto", a goal found stops counting as seen once this many episodes in a row after it have run to the
# limit: it was found by chance, not by the policy
LAPSE_EPISODES = 16


def one_cost(rewards: np.ndarray) -> bool:
    """
    :param rewards: reward of every step, shape (n_steps, n_envs)
    :return: whether every step cost the same: the rewards negative, equal on every env at each step, their scale
        moving by at most ``SCALE_DRIFT`` from one step to the next
    """
    if rewards.size == 0 or not rewards.max() < 0:
        return False
    per_step = rewards[:, 0]
    return not _envs_differ(rewards) and not np.any(np.abs(np.diff(per_step)) > SCALE_DRIFT * -per_step[:-1])


class GoalReading(NamedTuple):
    """
    What a rollout's episode ends say of the goal.

    :param seen: whether an episode ended inside the rollout before the longest episode time in it or before the
        earlier rollouts' (it found the goal, where the others run to the time limit), or the envs' rewards differed at
        some step (one of them got another reward than the cost)
    :param limits_after: the episodes that ended at that longest time after the rollout's last step that found the
        goal, all of them where none did
    """

    seen: bool
    limits_after: int


def read_goal(
    rewards: np.ndarray, episode_starts: np.ndarray, episode_times: np.ndarray, last_dones: np.ndarray, longest_before: int = 0
) -> GoalReading:
    """
    :param rewards: reward of every step, shape (n_steps, n_envs)
    :param episode_starts: whether each step starts an episode
    :param episode_times: steps since each sample's episode began
    :param last_dones: whether each env's last step ended its episode
    :param longest_before: the longest episode time that earlier rollouts showed
    :return: whether the rollout found the goal, and the episodes that ran to the limit after it
    """
    ended = np.concatenate([episode_starts[1:].astype(bool), np.asarray(last_dones, dtype=bool)[None]], axis=0)
    longest = max(int(episode_times.max(initial=0)), longest_before)
    early = ended & (episode_times < longest)
    found = early.any(axis=1) | _differing_steps(rewards)
    after = np.flatnonzero(found)[-1] + 1 if found.any() else 0
    return GoalReading(bool(found.any()), int((ended[after:] & (episode_times[after:] >= longest)).sum()))


def goal_hidden(rewards: np.ndarray, seen: bool, seen_before: bool) -> bool:
    """
    :param rewards: reward of every step, shape (n_steps, n_envs)
    :param seen: whether the rollout found a goal (``read_goal``)
    :param seen_before: whether a goal found by an earlier rollout still counts (``BaselineMemory.goal_seen``)
    :return: whether the optimism's case holds: every step cost the same (``one_cost``) and no goal was seen
    """
    return not (seen or seen_before) and one_cost(rewards)


def _envs_differ(rewards: np.ndarray) -> bool:
    """:return: whether some step's rewards differ between envs by more than rounding"""
    return bool(_differing_steps(rewards).any())


def _differing_steps(rewards: np.ndarray) -> np.ndarray:
    """:return: whether each step's rewards differ between envs by more than rounding"""
    per_step = rewards[:, :1]
    return np.any(np.abs(rewards - per_step) > 1e-6 * np.abs(per_step), axis=1)


def novelty(features: np.ndarray, grams: list[np.ndarray], ridge: float) -> np.ndarray:
    """
    :param features: the rows to score, one per sample
    :param grams: the Gram matrices ``X^T X`` of the fit's samples (the current rollout's and the remembered ones'), of
        the features' columns, the constant first
    :param ridge: the penalty per sample on a standardised coefficient, as the fit's
    :return: each row's leverage ``x^T (X^T X + P)^-1 x`` over the samples' mean leverage (1 at a typical sample,
        larger where the fit has seen few like it), with ``P`` the fit's ridge
    """
    gram = np.sum(grams, axis=0)
    count = gram[0, 0]
    variances = np.maximum(np.diag(gram) / count - (gram[0] / count) ** 2, 0.0)
    floor = variances[variances > 1e-12 * variances.max()].min() if variances.max() > 0 else 1.0
    penalty = ridge * count * np.maximum(variances, floor)
    penalty[0] = ridge * count * 1e-12
    # x^T S^-1 x = |L^-1 x|^2 with S = L L^T
    lower = th.linalg.cholesky(th.from_numpy(gram + np.diag(penalty)))
    leverage = th.linalg.solve_triangular(lower, th.from_numpy(np.ascontiguousarray(features.T)), upper=False)
    leverage = (leverage * leverage).sum(dim=0).numpy()
    return leverage / max(float(np.mean(leverage)), np.finfo(float).tiny)
