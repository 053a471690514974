"""
What the tests share: random rollouts, filling a group buffer, ``estimate`` and the group buffers checked against the
loop-by-loop reference (tests/reference.py) with the group options, one rollout of a model, an env wrapper that keeps
the actions it was stepped with, the four algorithms as the feature tests run them, and ``python -m`` run in a folder
(through tests/forkserver.py).
"""

import subprocess
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
import torch as th
from gymnasium import spaces
from sb3_contrib import MaskablePPO, RecurrentPPO
from sb3_contrib.common.maskable.utils import get_action_masks
from stable_baselines3 import PPO
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecEnv

from sb3_gpg import GPG, MaskableGPG, MaskableRecurrentGPG, RecurrentGPG
from sb3_gpg.common.envs import MaskedTMazeEnv
from sb3_gpg.estimator import Estimate, GroupOptions, estimate
from sb3_gpg.estimator.baseline_memory import BaselineMemory
from sb3_gpg.estimator.binning import BINNINGS
from sb3_gpg.estimator.fitted_baselines import remembered_rollouts
from sb3_gpg.estimator.returns import episode_times
from tests.forkserver import SERVER
from tests.reference import ReferenceGPG


def modulo_binning(obs, t):
    """A custom binning: parity of the episode time and sign of the first coordinate."""
    return (t % 2) * 2 + (obs[..., 0] > 0).astype(np.int64)


CASES = [
    dict(binning=binning, leave_one_out=loo, min_bin_count=min_count, truncated_returns=truncated, advantage_scale=scale)
    for binning in (*[b for b in BINNINGS if b != "state"], modulo_binning)
    for loo in (False, True)
    for min_count, truncated, scale in (
        (1, "keep", "none"),
        (3, "keep", "none"),
        (1, "mask", "none"),
        (2, "mask", "none"),
        (1, "bootstrap", "none"),
        (3, "bootstrap", "none"),
        (1, "keep", "bin_std"),
        (2, "mask", "bin_std"),
        (2, "bootstrap", "bin_std"),
    )
]


def case_id(case: dict[str, Any]) -> str:
    return "-".join(str(getattr(value, "__name__", value)) for value in case.values())


class Rollout(NamedTuple):
    observations: np.ndarray  # (n_steps, n_envs, obs_dim)
    rewards: np.ndarray
    episode_starts: np.ndarray
    last_dones: np.ndarray  # whether each env's last step ended its episode
    last_obs: np.ndarray  # the observation after the rollout, for truncated_returns="bootstrap"


class RandomRollouts:
    """
    Rollouts of episodes of random lengths, their observations on a coarse grid so that spatial bins collide.

    :param seed: of the rollouts' random generator
    """

    n_steps, n_envs, obs_dim = 24, 5, 3

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    @property
    def observation_space(self) -> spaces.Box:
        return spaces.Box(-10, 10, (self.obs_dim,), np.float32)

    def observations(self, n_steps: int, discrete: bool = False) -> np.ndarray:
        if discrete:
            return self.rng.integers(0, 3, size=(n_steps, self.n_envs, 2)).astype(np.float32)
        grid = self.rng.integers(-4, 5, size=(n_steps, self.n_envs, self.obs_dim)) * 0.35
        return (grid + self.rng.normal(0, 0.05, grid.shape)).astype(np.float32)

    def one(self, first_starts: np.ndarray | None = None, discrete: bool = False) -> Rollout:
        """
        :param first_starts: which envs start an episode at the first step (default: all)
        :param discrete: observations of two coordinates in {0, 1, 2}, for state binning
        """
        observations = self.observations(self.n_steps, discrete)
        rewards = self.rng.normal(0.5, 1.0, size=(self.n_steps, self.n_envs)).astype(np.float32)
        episode_starts = (self.rng.random((self.n_steps, self.n_envs)) < 0.15).astype(np.float32)
        episode_starts[0] = 1.0 if first_starts is None else first_starts
        last_dones = self.rng.random(self.n_envs) < 0.5
        return Rollout(observations, rewards, episode_starts, last_dones, self.observations(1, discrete)[0])

    def consecutive(self, n_rollouts: int) -> Iterator[Rollout]:
        """Rollouts whose episodes cross the borders: each starts where the last one's dones say."""
        rollout = self.one()
        yield rollout
        for _ in range(n_rollouts - 1):
            rollout = self.one(first_starts=rollout.last_dones.astype(np.float32))
            yield rollout


def fill_buffer(
    buffer, observations, rewards, episode_starts, with_step: Callable[[Any], dict[str, Any]] = lambda obs: {}
) -> None:
    """
    Reset the buffer and add a rollout to it, with zero actions, values and log probabilities.

    :param observations: an array, or a dict of arrays for the dict buffers
    :param with_step: the step's observations -> the extra keyword arguments of ``buffer.add`` (action masks, LSTM
        states)
    """
    buffer.reset()
    for step in range(len(rewards)):
        n_envs = len(rewards[step])
        obs = (
            {key: value[step] for key, value in observations.items()} if isinstance(observations, dict) else observations[step]
        )
        buffer.add(
            obs,
            np.zeros((n_envs, 1)),
            rewards[step],
            episode_starts[step],
            th.zeros(n_envs),
            th.zeros(n_envs),
            **with_step(obs),
        )


def assert_buffer_matches(
    buffer, reference: ReferenceGPG, rollout: Rollout, as_buffer_obs: Callable[[np.ndarray], Any] = lambda obs: obs
) -> np.ndarray:
    """
    Compute the buffer's advantages of the rollout it holds and compare them with the reference's.

    :param as_buffer_obs: the reference's observations -> the buffer's (the dict buffers': a dict of arrays)
    :return: which samples the reference keeps in the group
    """
    buffer.compute_returns_and_advantage(th.zeros(buffer.n_envs), rollout.last_dones, last_obs=as_buffer_obs(rollout.last_obs))
    returns, baselines, advantages, in_group = reference.advantages(*rollout)
    np.testing.assert_allclose(buffer.returns, returns, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(buffer.values, baselines, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(buffer.advantages, advantages, rtol=1e-5, atol=1e-5)
    return in_group


class RolloutEstimator:
    """
    ``estimate`` of consecutive rollouts, called as ``ReferenceGPG.advantages`` is (``estimate``'s positional
    arguments): the episode times and the linear baseline's memory carry across rollouts, as a buffer carries them.

    :param n_envs: number of envs
    :param gamma: discount factor
    :param gae_lambda: GAE's lambda over the baselines
    :param feature_keys: for Dict observations, the keys the fitted baselines read
    :param goal_lapses: whether the optimism's goal lapses (``BaselineMemory``; a buffer's under ``gae_lambda="auto"``)
    :param options: GPG's options (``GroupOptions``)
    """

    def __init__(
        self,
        n_envs: int,
        gamma: float,
        gae_lambda: float = 1.0,
        feature_keys: tuple[str | None, ...] = (None,),
        goal_lapses: bool = False,
        **options,
    ):
        self.gamma, self.gae_lambda, self.feature_keys = gamma, gae_lambda, feature_keys
        self.options = GroupOptions(**options).checked()
        self.next_times = np.zeros(n_envs, dtype=np.int64)
        # the linear baseline's memory of the last rollouts, as a buffer keeps it
        self.memory = BaselineMemory(remembered_rollouts(self.options.baseline_kwargs), goal_lapses)

    def __call__(self, observations, rewards, episode_starts, last_dones, last_obs=None) -> Estimate:
        times = episode_times(episode_starts, self.next_times)
        self.next_times = times[-1] + 1
        result = estimate(
            observations,
            rewards,
            episode_starts,
            last_dones,
            last_obs,
            episode_times=times,
            options=self.options,
            gamma=self.gamma,
            gae_lambda=self.gae_lambda,
            feature_keys=self.feature_keys,
            memory=self.memory,
        )
        if result.memory_entry is not None:
            self.memory.remember(result.memory_entry, result.last_fit)
        return result


# The linear baseline's arguments where the reference fits its default target below lambda 1, its own lambda-returns,
# which it reads over one unit fit per feature: fewer Fourier features than the default's keep it quick (the target's
# path is the same at any number)
QUICK_LAMBDA_FIT: dict[str, Any] = {"fourier": 16}


def with_seed_of(buffer, baseline_kwargs: dict[str, Any] | None) -> dict[str, Any] | None:
    """
    :param buffer: a group buffer
    :param baseline_kwargs: the reference's fitted baseline's arguments
    :return: those arguments with the linear baseline's ``fourier_seed`` that the buffer resolved (a group buffer draws
        one where it is None), for the reference to draw the same random features; as given for another baseline
    """
    if buffer.group_options.baseline != "linear":
        return baseline_kwargs
    return {**(baseline_kwargs or {}), "fourier_seed": buffer.group_options.baseline_kwargs["fourier_seed"]}


def assert_estimate_matches(result: Estimate, expected: tuple[np.ndarray, ...], tolerance: float = 1e-5) -> None:
    """
    :param result: ``estimate``'s
    :param expected: ``ReferenceGPG.advantages``': returns, baselines, advantages and which samples are in the group
    :param tolerance: relative and absolute, of the baselines and advantages
    """
    returns, baselines, advantages, in_group = expected
    np.testing.assert_allclose(result.returns, returns, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(result.baselines[in_group], baselines[in_group], rtol=tolerance, atol=tolerance)
    np.testing.assert_allclose(result.advantages, np.where(in_group, advantages, 0.0), rtol=tolerance, atol=tolerance)
    np.testing.assert_array_equal(result.in_loss, None if in_group.all() else in_group.T.reshape(-1))


class GroupCase(RandomRollouts):
    """
    One entry of ``CASES``: its random rollouts, the group buffer's keyword arguments and the reference.

    :param index: the entry's index, which seeds its rollouts
    """

    gamma, bin_size = 0.95, [0.4, 0.7, 1.0]

    def __init__(self, index: int):
        super().__init__(seed=index)
        self.options = CASES[index]
        self.reference = ReferenceGPG(self.n_envs, self.gamma, bin_size=self.bin_size, **self.options)

    def estimator(self) -> RolloutEstimator:
        """
        :return: ``estimate`` with the entry's options, for its consecutive rollouts
        """
        return RolloutEstimator(self.n_envs, self.gamma, bin_size=self.bin_size, **self.options)

    @property
    def buffer_kwargs(self) -> dict[str, Any]:
        return dict(gamma=self.gamma, n_envs=self.n_envs, bin_size=self.bin_size, **self.options)

    def check(self, buffer, rollout: Rollout, with_step: Callable[[Any], dict[str, Any]] = lambda obs: {}) -> np.ndarray:
        """
        Fill the buffer with the rollout, compute its advantages and compare them with the reference's.

        :return: which samples the reference keeps in the group
        """
        fill_buffer(buffer, rollout.observations, rollout.rewards, rollout.episode_starts, with_step)
        return assert_buffer_matches(buffer, self.reference, rollout)


class ActionRecorder(gym.Wrapper):
    """Keeps the actions the env was stepped with: what the algorithm sent, after its own clipping or unscaling."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.actions: list[np.ndarray] = []

    def step(self, action):
        self.actions.append(np.array(action))
        return super().step(action)


def collect_rollout(model):
    """
    :return: the buffer of one rollout of the model's untrained policy, not updated on (so not flattened by ``get``)
    """
    _, callback = model._setup_learn(model.n_steps * model.n_envs, callback=None)
    model.collect_rollouts(model.env, callback, model.rollout_buffer, model.n_steps)
    return model.rollout_buffer


class SplitObservation(gym.ObservationWrapper):
    """
    A Box observation as a Dict of its first two coordinates ("a") and the rest ("b"): the Dict's keys sort in that
    order, so the buffer's features are the Box's coordinates in order. Keeps the env's ``action_masks``.
    """

    def __init__(self, env: gym.Env):
        super().__init__(env)
        box = env.observation_space
        assert isinstance(box, spaces.Box) and box.shape is not None
        self.observation_space = spaces.Dict(
            {
                "a": spaces.Box(box.low[:2], box.high[:2], dtype=box.dtype),
                "b": spaces.Box(box.low[2:], box.high[2:], dtype=box.dtype),
            }
        )

    def observation(self, observation: np.ndarray) -> dict[str, np.ndarray]:
        return {"a": observation[:2], "b": observation[2:]}

    def action_masks(self) -> np.ndarray:
        return self.env.unwrapped.action_masks()  # type: ignore[attr-defined]


class Algorithm(NamedTuple):
    """
    One of the four algorithms as the feature tests run it (save/load, Dict observations, the estimator's options).

    :param cls: the algorithm
    :param anchor: the PPO it replaces: its files are refused with a message that names it
    :param masked: whether it takes action masks
    :param recurrent: whether its policy carries LSTM states
    """

    cls: type[BaseAlgorithm]
    anchor: type[BaseAlgorithm]
    masked: bool
    recurrent: bool

    @property
    def name(self) -> str:
        return self.cls.__name__

    def policy(self, dict_observations: bool = False) -> str:
        return ("MultiInput" if dict_observations else "Mlp") + ("Lstm" if self.recurrent else "") + "Policy"

    @property
    def small(self) -> dict[str, Any]:
        """Short rollouts and a small network: the keyword arguments of a model that trains in a second."""
        network = dict(policy_kwargs=dict(lstm_hidden_size=8, net_arch=[16])) if self.recurrent else {}
        return dict(n_steps=32, batch_size=32, n_epochs=2, **network)

    def env(self, dict_observations: bool = False) -> VecEnv:
        """
        :param dict_observations: the observations split into a Dict (``SplitObservation``)
        :return: T-mazes whose walls are action masks: episodes of every length, invalid actions for the unmasked
        """
        return make_vec_env(MaskedTMazeEnv, n_envs=4, seed=0, wrapper_class=SplitObservation if dict_observations else None)

    def predict(self, model, env: VecEnv, obs, state=None, episode_start=None) -> tuple[np.ndarray, Any]:
        """``model.predict``, deterministic, with the env's masks for the masked algorithms."""
        masks = dict(action_masks=get_action_masks(env)) if self.masked else {}
        return model.predict(obs, state=state, episode_start=episode_start, deterministic=True, **masks)


# A rollout of CartPole's length and two short epochs: the tests that only need GPG to train, quickly
SMALL = dict(n_steps=64, batch_size=32, n_epochs=2)
ALGORITHMS = (
    Algorithm(GPG, PPO, masked=False, recurrent=False),
    Algorithm(MaskableGPG, MaskablePPO, masked=True, recurrent=False),
    Algorithm(RecurrentGPG, RecurrentPPO, masked=False, recurrent=True),
    Algorithm(MaskableRecurrentGPG, RecurrentPPO, masked=True, recurrent=True),
)


def cli(*args: str, cwd: Any, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``python -m <args>`` in ``cwd``; with ``check``, fail the test with the end of its output unless it exits 0."""
    result = SERVER.run("-m", *args, cwd=cwd, timeout=300)
    if check:
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result
