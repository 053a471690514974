"""
An SB3 ``VecEnv`` over EnvPool (C++ vectorised environments), for large groups at C++ speed.

EnvPool steps all its environments in C++ threads and resets a finished one on the *next* step (Gymnasium's
``NEXT_STEP`` autoreset). SB3 expects what ``DummyVecEnv`` does: a finished env is reset in the same step, its last
observation goes to ``infos[i]["terminal_observation"]``, a time-limit cut is flagged in
``infos[i]["TimeLimit.truncated"]``, and ``Monitor`` reports ``infos[i]["episode"]``. ``EnvPoolVecEnv`` keeps that
contract: after each step it resets exactly the envs that finished (one extra call into EnvPool, only on steps where
some episode ended) and fills the info dicts from arrays; episode statistics are kept as arrays too. The only
per-env Python work of a step is building SB3's list of info dicts.

Install it with ``pip install "sb3-gpg[envpool]"``.
"""

import difflib
import time
import warnings
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices, VecEnvObs, VecEnvStepReturn

INSTALL_HINT = 'pip install "sb3-gpg[envpool]"'


def import_envpool():
    """
    :return: the ``envpool`` module
    :raises ImportError: naming the extra that installs it
    """
    try:
        import envpool
    except ImportError as error:
        raise ImportError(f"EnvPool is not installed: {INSTALL_HINT} (or pip install envpool).") from error
    return envpool


def check_envpool_env_id(env_id: str) -> None:
    """
    :raises ValueError: when EnvPool has no such env, with the closest ids it has
    """
    known = import_envpool().list_all_envs()
    if env_id not in known:
        close = difflib.get_close_matches(env_id, known, n=3)
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else "."
        raise ValueError(f"EnvPool has no environment {env_id!r}{hint} Use make_vec_env (DummyVecEnv) for other envs.")


def gymnasium_spaces(env_id: str, pool_observation_space: spaces.Space, pool_action_space: spaces.Space):
    """
    The observation and action spaces of ``env_id`` as Gymnasium defines them, where Gymnasium can make the env and
    its spaces have EnvPool's shapes (EnvPool's ports sometimes declare other bounds or dtypes, e.g. LunarLander's
    observation bounds or the MuJoCo actions in float64); EnvPool's own spaces otherwise.
    """
    try:
        reference = gym.make(env_id)
    except Exception:  # not registered, a missing extra (Box2D, MuJoCo), ...: EnvPool's spaces are all there is
        return pool_observation_space, pool_action_space
    observation_space, action_space = reference.observation_space, reference.action_space
    reference.close()
    same_observations = type(observation_space) is type(pool_observation_space) and (
        observation_space.shape == pool_observation_space.shape
    )
    same_actions = type(action_space) is type(pool_action_space) and action_space.shape == pool_action_space.shape
    if isinstance(action_space, spaces.Discrete) and isinstance(pool_action_space, spaces.Discrete):
        same_actions = same_actions and action_space.n == pool_action_space.n
    return (
        observation_space if same_observations else pool_observation_space,
        action_space if same_actions else pool_action_space,
    )


class EnvPoolVecEnv(VecEnv):
    """
    SB3 ``VecEnv`` over an EnvPool Gymnasium pool of ``n_envs`` copies of ``env_id``, with ``DummyVecEnv``'s
    semantics: same-step auto-reset with ``terminal_observation``, ``TimeLimit.truncated``, and ``Monitor``'s
    ``episode`` statistics (``env_is_wrapped(Monitor)`` is True, so ``evaluate_policy`` and ``EvalCallback`` count
    whole episodes). ``VecNormalize``, ``VecFrameStack`` and ``VecMonitor`` wrap it as any VecEnv.

    Seeding follows SB3: env ``i`` is seeded with ``seed + i``. EnvPool takes int32 seeds only, so seeds past
    ``2**31 - n_envs`` (RL Zoo draws them up to ``2**32``) are taken modulo it. EnvPool fixes seeds when a pool is
    built, so ``seed()`` builds a new pool at the next ``reset()``. EnvPool runs its envs in C++: ``get_attr`` knows only
    ``render_mode`` and ``spec``, and ``set_attr``, ``env_method`` and rendering raise a clear error.

    :param env_id: an EnvPool task id, e.g. ``"LunarLander-v3"`` (``envpool.list_all_envs()`` lists them)
    :param n_envs: number of environments
    :param seed: seed of env 0 (env ``i`` gets ``seed + i``); random when None
    :param num_threads: EnvPool's C++ worker threads (0: EnvPool's default, one per core up to ``n_envs``)
    :param env_kwargs: EnvPool task options, e.g. ``max_episode_steps``; see ``envpool.make``
    """

    def __init__(
        self,
        env_id: str,
        n_envs: int = 1,
        seed: int | None = None,
        num_threads: int = 0,
        **env_kwargs: Any,
    ):
        if n_envs < 1:
            raise ValueError(f"n_envs must be at least 1, got {n_envs}.")
        if "render_mode" in env_kwargs and env_kwargs["render_mode"] is not None:
            raise ValueError(
                "EnvPoolVecEnv does not render: leave render_mode out, and use make_vec_env to record videos or watch."
            )
        env_kwargs.pop("render_mode", None)
        check_envpool_env_id(env_id)
        self.env_id = env_id
        self.num_threads = num_threads
        self.env_kwargs = env_kwargs
        self.pool = self._make_pool(n_envs, self._draw_seed() if seed is None else seed)
        observation_space, action_space = gymnasium_spaces(env_id, self.pool.observation_space, self.pool.action_space)
        super().__init__(n_envs, observation_space, action_space)
        self._obs_dtype = None if isinstance(observation_space, spaces.Dict) else observation_space.dtype
        self.actions: np.ndarray | None = None
        self.episode_returns = np.zeros(n_envs, dtype=np.float64)
        self.episode_lengths = np.zeros(n_envs, dtype=np.int64)
        self.t_start = time.time()

    @staticmethod
    def _draw_seed() -> int:
        return int(np.random.randint(0, np.iinfo(np.int32).max - 2**20))

    def _make_pool(self, n_envs: int, seed: int):
        envpool = import_envpool()
        seed = int(seed) % (np.iinfo(np.int32).max - n_envs)  # EnvPool asserts int32 seeds (for seed + i as well)
        try:
            pool = envpool.make_gymnasium(
                self.env_id, num_envs=n_envs, seed=seed, num_threads=self.num_threads, **self.env_kwargs
            )
        except (TypeError, ValueError, KeyError) as error:
            raise ValueError(f"EnvPool could not make {self.env_id!r} with {self.env_kwargs}: {error}") from error
        with warnings.catch_warnings():
            # EnvPool declares float32 Boxes with float64 bounds, which Gymnasium warns about when the pool first builds
            # its spaces (then cached): nothing for the user to fix
            warnings.filterwarnings("ignore", message=".*precision lowered by casting to float32")
            _ = pool.observation_space, pool.action_space
        return pool

    def _cast(self, obs: Any) -> Any:
        """Observations in the dtype of ``observation_space`` (EnvPool's may differ, e.g. int32 for Discrete)."""
        if isinstance(obs, dict):
            # SB3's VecEnv types it as a Space; dict observations come from a Dict space
            return {key: np.asarray(value, dtype=self.observation_space[key].dtype) for key, value in obs.items()}  # type: ignore[index]
        return np.asarray(obs, dtype=self._obs_dtype)

    def reset(self) -> VecEnvObs:
        if any(self._options):
            raise ValueError("EnvPool takes no reset options: set_options() cannot be used with EnvPoolVecEnv.")
        if self._seeds[0] is not None:
            self.pool.close()
            self.pool = self._make_pool(self.num_envs, self._seeds[0])
        obs, _ = self.pool.reset()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        self.episode_returns[:] = 0.0
        self.episode_lengths[:] = 0
        self._reset_seeds()
        self._reset_options()
        return self._cast(obs)

    def step_async(self, actions: np.ndarray) -> None:
        self.actions = actions

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, terminated, truncated, _ = self.pool.step(np.asarray(self.actions))
        obs = self._cast(obs)  # a new array each step: safe to modify
        dones = terminated | truncated
        self.episode_returns += rewards
        self.episode_lengths += 1
        # SB3's convention: a time-limit cut is a truncation only where the episode did not also terminate
        infos: list[dict[str, Any]] = [{"TimeLimit.truncated": cut} for cut in (truncated & ~terminated).tolist()]
        finished = np.flatnonzero(dones)
        if finished.size:
            reset_obs, reset_info = self.pool.reset(finished.astype(np.int32))
            order = np.asarray(reset_info["env_id"])
            elapsed = round(time.time() - self.t_start, 6)
            for env_index, episode_return, length in zip(
                finished.tolist(),
                self.episode_returns[finished].tolist(),
                self.episode_lengths[finished].tolist(),
                strict=True,
            ):
                info = infos[env_index]
                info["terminal_observation"] = self._terminal_observation(obs, env_index)
                info["episode"] = {"r": round(episode_return, 6), "l": length, "t": elapsed}
            self._scatter(obs, order, self._cast(reset_obs))
            self.episode_returns[finished] = 0.0
            self.episode_lengths[finished] = 0
        return obs, rewards.astype(np.float32, copy=False), dones, infos

    @staticmethod
    def _terminal_observation(obs: Any, env_index: int) -> Any:
        if isinstance(obs, dict):
            return {key: value[env_index].copy() for key, value in obs.items()}
        return obs[env_index].copy()

    @staticmethod
    def _scatter(obs: Any, env_ids: np.ndarray, values: Any) -> None:
        if isinstance(obs, dict):
            for key in obs:
                obs[key][env_ids] = values[key]
        else:
            obs[env_ids] = values

    def close(self) -> None:
        self.pool.close()

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """``render_mode`` (None) and ``spec`` (Gymnasium's, where registered); EnvPool's envs live in C++."""
        # SB3 types _get_indices as Iterable; it gives a range or a list
        count = len(self._get_indices(indices))  # type: ignore[arg-type]
        if attr_name == "render_mode":
            return [None] * count
        if attr_name == "spec":
            return [gym.spec(self.env_id) if self.env_id in gym.envs.registry else None] * count
        raise AttributeError(
            f"EnvPoolVecEnv cannot read {attr_name!r}: EnvPool's environments run in C++ and expose no Python "
            "attributes. Use make_vec_env (DummyVecEnv or SubprocVecEnv) where you need them."
        )

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        raise NotImplementedError(
            f"EnvPoolVecEnv cannot set {attr_name!r}: EnvPool's environments run in C++. Pass task options to "
            "make_envpool_env (e.g. max_episode_steps=...), or use make_vec_env."
        )

    def env_method(self, method_name: str, *method_args, indices: VecEnvIndices = None, **method_kwargs) -> list[Any]:
        raise NotImplementedError(
            f"EnvPoolVecEnv cannot call {method_name!r}: EnvPool's environments run in C++ and have no Python methods. "
            "Use make_vec_env (DummyVecEnv or SubprocVecEnv) where you need them."
        )

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        """True for ``Monitor`` only: every env reports ``Monitor``'s episode statistics, and has no other wrapper."""
        return [issubclass(Monitor, wrapper_class)] * len(self._get_indices(indices))  # type: ignore[arg-type]  # likewise

    def get_images(self) -> Sequence[np.ndarray | None]:
        raise NotImplementedError("EnvPoolVecEnv does not render: use make_vec_env to record videos or watch an agent.")

    def render(self, mode: str | None = None) -> np.ndarray | None:
        raise NotImplementedError("EnvPoolVecEnv does not render: use make_vec_env to record videos or watch an agent.")


def make_envpool_env(env_id: str, n_envs: int = 1, seed: int | None = None, **env_kwargs: Any) -> EnvPoolVecEnv:
    """
    EnvPool's counterpart of SB3's ``make_vec_env``: ``n_envs`` copies of ``env_id`` stepped in C++, as an SB3
    ``VecEnv`` with ``DummyVecEnv``'s semantics (see ``EnvPoolVecEnv``).

    :param env_id: an EnvPool task id, e.g. ``"LunarLander-v3"``
    :param n_envs: number of environments
    :param seed: seed of env 0 (env ``i`` gets ``seed + i``); random when None
    :param env_kwargs: EnvPool options: ``num_threads`` (C++ worker threads; 0, the default, one per core) and the
        task's own, e.g. ``max_episode_steps``
    :return: the vectorised environment
    """
    return EnvPoolVecEnv(env_id, n_envs=n_envs, seed=seed, **env_kwargs)
