"""
What the group baseline is computed from: episode times, Monte-Carlo returns, trajectories, and the completion of
returns that the rollout's end cut.

Pure array code on one rollout, laid out as SB3's rollout buffers store it: one row per step, one column per env,
shape (n_steps, n_envs). Nothing here knows of Stable-Baselines3.
"""

import numpy as np


def env_major(array: np.ndarray) -> np.ndarray:
    """
    :param array: one value per sample, shape (n_steps, n_envs)
    :return: the values flattened env by env (as SB3's ``RolloutBuffer.get`` flattens them), which keeps each
        trajectory's samples together and in time order, as first visits need
    """
    return array.swapaxes(0, 1).reshape(-1)


def episode_times(episode_starts: np.ndarray, carried_times: np.ndarray) -> np.ndarray:
    """
    :param episode_starts: whether each step starts an episode, shape (n_rows, n_envs)
    :param carried_times: episode time of each env's first step, for episodes that began before the rollout
    :return: steps since each sample's episode began, shape (n_rows, n_envs), int64
    """
    rows = np.arange(len(episode_starts))[:, None]
    last_start = np.maximum.accumulate(np.where(episode_starts != 0, rows, -1), axis=0)
    return np.where(last_start >= 0, rows - last_start, carried_times + rows)


def discounted_returns(
    rewards: np.ndarray, episode_starts: np.ndarray, last_dones: np.ndarray, gamma: float
) -> tuple[np.ndarray, np.ndarray]:
    """
    :param rewards: reward of every step, shape (n_steps, n_envs)
    :param episode_starts: whether each step starts an episode
    :param last_dones: whether each env's last step ended its episode, shape (n_envs,)
    :param gamma: discount factor
    :return: the discounted sum of rewards up to the end of the sample's episode or of the rollout (float64), and
        which samples' returns the rollout's end cut (no episode ends at their step or any later one)
    """
    n_steps = len(rewards)
    ends = np.empty(rewards.shape, dtype=bool)
    ends[:-1] = episode_starts[1:]
    ends[-1] = last_dones
    discounts = gamma * ~ends
    returns = np.empty(rewards.shape, dtype=np.float64)
    returns[-1] = rewards[-1]
    for step in reversed(range(n_steps - 1)):  # a loop over steps, vectorised over envs
        np.multiply(discounts[step], returns[step + 1], out=returns[step])
        returns[step] += rewards[step]
    cut = ~np.logical_or.accumulate(ends[::-1], axis=0)[::-1]
    return returns, cut


def trajectory_ids(episode_starts: np.ndarray) -> np.ndarray:
    """
    :param episode_starts: whether each step starts an episode, shape (n_steps, n_envs)
    :return: the trajectory of every sample, env-major (see ``env_major``): a trajectory is an episode's part within
        the rollout, so one also starts at each env's first row; ids grow along the env-major order
    """
    starts = episode_starts.astype(bool)
    starts[0] = True
    return np.cumsum(env_major(starts)) - 1


def completed_returns(returns: np.ndarray, cut: np.ndarray, values_at_cut: np.ndarray, gamma: float) -> np.ndarray:
    """
    :param returns: discounted returns, shape (n_steps, n_envs)
    :param cut: which samples' returns the rollout's end cut
    :param values_at_cut: the value of each env's state after the rollout, shape (n_envs,) (0 where it has none)
    :return: the returns, with ``gamma**k`` times the value after the rollout added to each cut one, k steps before
        the rollout's end
    """
    steps_to_cut = len(returns) - np.arange(len(returns))[:, None]
    return returns + np.where(cut, gamma**steps_to_cut * values_at_cut, 0.0)


def lambda_advantages(
    rewards: np.ndarray,
    baselines: np.ndarray,
    episode_starts: np.ndarray,
    last_dones: np.ndarray,
    values_at_cut: np.ndarray,
    gamma: float,
    gae_lambda: float,
) -> np.ndarray:
    """
    GAE's lambda-return over the group baselines: ``A_t = sum_k (gamma * lambda)**k delta_{t+k}`` along the sample's
    trajectory within the rollout, with ``delta_t = r_t + gamma * v_{t+1} - b_t``, where ``v_{t+1}`` is the baseline of
    the trajectory's next sample, 0 after its episode's end (terminated or truncated, as the returns treat both), and
    ``values_at_cut`` after the rollout's end.

    :param rewards: reward of every step, shape (n_steps, n_envs)
    :param baselines: baseline of every sample, shape (n_steps, n_envs)
    :param episode_starts: whether each step starts an episode
    :param last_dones: whether each env's last step ended its episode, shape (n_envs,)
    :param values_at_cut: the value of each env's state after the rollout (0 where none), shape (n_envs,)
    :param gamma: discount factor
    :param gae_lambda: GAE's lambda
    :return: the advantages, float64, shape (n_steps, n_envs)
    """
    continues = np.empty(rewards.shape, dtype=bool)
    continues[:-1] = episode_starts[1:] == 0
    continues[-1] = ~np.asarray(last_dones, dtype=bool)
    next_values = np.empty(rewards.shape, dtype=np.float64)
    next_values[:-1] = baselines[1:]
    next_values[-1] = values_at_cut
    deltas = rewards + gamma * np.where(continues, next_values, 0.0) - baselines
    advantages = np.empty(rewards.shape, dtype=np.float64)
    advantages[-1] = deltas[-1]
    for step in reversed(range(len(rewards) - 1)):  # a loop over steps, vectorised over envs
        advantages[step] = deltas[step] + gamma * gae_lambda * continues[step] * advantages[step + 1]
    return advantages
