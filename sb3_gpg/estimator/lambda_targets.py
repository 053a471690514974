"""
The linear baseline's targets under ``baseline_kwargs={"target": "lambda_returns"}``, and under its default ``"auto"``
where GAE's lambda is below 1: its own lambda-returns, as PPO's critic is fitted on GAE's returns over itself, rather
than the Monte-Carlo returns.

A sample's lambda-return over a value V, ``y_t = r_t + gamma * ((1 - lambda) * V(s_{t+1}) + lambda * y_{t+1})``
(``y_t = r_t`` where its episode ends; where the rollout's end cuts it, ``r_t + gamma * V(s_after)`` with the value
of the fit that completes cut returns, where they are completed, else ``r_t``), is linear in the coefficients w of a
linear V: ``X^T y = X^T R + gamma * (1 - lambda) * X^T N w + cut terms``, with R the rewards
summed at ``gamma * lambda`` along the trajectory and N the next states' features summed so. The fit then solves for
the w whose own lambda-returns it fits (LSTD(lambda), with the ridge) from statistics the size of the Gram: its cost
does not grow with the rollout's length or the observation's size. At lambda 1 the terms are the Monte-Carlo ones.

Pure array code on one rollout's samples, env-major; nothing here knows of Stable-Baselines3.
"""

from typing import NamedTuple

import numpy as np

from sb3_gpg.estimator.returns import discounted_returns, env_major

# "auto": the lambda-returns where GAE's lambda is below 1, the returns at 1 (where the two are one)
TARGETS = ("auto", "returns", "lambda_returns")


class LambdaTerms(NamedTuple):
    """
    What the lambda-returns add to a sample's row of the fit, env-major, one row per sample.

    :param partial: the rewards to the end of its trajectory within the rollout, summed at ``gamma * lambda``
    :param discounts: ``gamma * (gamma * lambda) ** (k - 1)`` (k steps to the rollout's end) for a cut return that is to
        be completed, else 0: the weight of the value after the rollout in its lambda-return
    :param next_sums: the features of the trajectory's next states within the rollout, summed at ``gamma * lambda``
        from the next one
    :param scale: ``gamma * (1 - lambda)``, the weight of a next state's value in a lambda-return's step
    """

    partial: np.ndarray
    discounts: np.ndarray
    next_sums: np.ndarray
    scale: float

    def cross(self, features: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """
        :param features: the features of the samples ``rows``
        :return: ``scale * X^T N`` of those samples: the products of their features with their next states'
        """
        return self.scale * (features.T @ self.next_sums[rows])


def lambda_terms(
    features: np.ndarray,
    rewards: np.ndarray,
    episode_starts: np.ndarray,
    last_dones: np.ndarray,
    completes_cut: bool,
    gamma: float,
    gae_lambda: float,
) -> LambdaTerms:
    """
    :param features: the fitted baseline's features of every sample of the rollout, env-major
    :param rewards: reward of every step, shape (n_steps, n_envs)
    :param episode_starts: whether each step starts an episode
    :param last_dones: whether each env's last step ended its episode, shape (n_envs,)
    :param completes_cut: whether the returns that the rollout's end cuts are completed by a value after it
    :param gamma: discount factor
    :param gae_lambda: GAE's lambda, below 1
    :return: the terms of every sample of the rollout
    """
    n_steps, n_envs = rewards.shape
    decay = gamma * gae_lambda
    partial, cut = discounted_returns(rewards, episode_starts, last_dones, decay)
    discounts = np.zeros(rewards.shape)
    if completes_cut:
        discounts = np.where(cut, gamma * decay ** (n_steps - 1 - np.arange(n_steps))[:, None], 0.0)
    # whether each sample's next state is its trajectory's next sample within the rollout
    continues = np.zeros((n_envs, n_steps), dtype=bool)
    continues[:, :-1] = episode_starts[1:].T == 0
    grid = features.reshape(n_envs, n_steps, -1)
    next_sums = np.zeros_like(grid)
    for step in reversed(range(n_steps - 1)):  # a loop over steps, vectorised over envs
        np.multiply(grid[:, step + 1] + decay * next_sums[:, step + 1], continues[:, step, None], out=next_sums[:, step])
    return LambdaTerms(
        env_major(partial), env_major(discounts), next_sums.reshape(len(features), -1), gamma * (1.0 - gae_lambda)
    )


def selected(terms: LambdaTerms | None, rows: np.ndarray) -> LambdaTerms | None:
    """:return: the terms of the samples ``rows`` (a mask or indices), or None"""
    if terms is None:
        return None
    return terms._replace(partial=terms.partial[rows], discounts=terms.discounts[rows], next_sums=terms.next_sums[rows])
