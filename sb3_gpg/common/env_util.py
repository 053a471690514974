"""
Vectorised environments on a chosen backend: SB3's DummyVecEnv or SubprocVecEnv, or EnvPool's C++ envs.
"""

import difflib
from collections.abc import Callable
from typing import Any

import gymnasium as gym
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv

from sb3_gpg.common.vec_env.envpool import make_envpool_env

VEC_ENVS = ("dummy", "subproc", "envpool")


def check_env_id(env_id: str) -> None:
    """
    :param env_id: a Gymnasium environment id
    :raises ValueError: for an id that no imported module registers, naming the closest registered id
    """
    if env_id not in gym.envs.registry:
        match = difflib.get_close_matches(env_id, list(gym.envs.registry), n=1)
        raise ValueError(f"Unknown environment {env_id!r}" + (f": did you mean {match[0]!r}?" if match else "."))


def make_vec_env_on(
    env: str | Callable[[], gym.Env],
    n_envs: int = 1,
    seed: int | None = None,
    vec_env: str = "dummy",
    num_threads: int = 0,
    env_kwargs: dict[str, Any] | None = None,
    wrapper_class: type[gym.Wrapper] | None = None,
) -> VecEnv:
    """
    :param env: a Gymnasium (or, for ``envpool``, an EnvPool) environment id, or (Gymnasium's envs only) a function that
        makes one env
    :param n_envs: number of environments
    :param seed: seed of env 0 (env ``i`` gets ``seed + i``)
    :param vec_env: ``dummy`` (DummyVecEnv), ``subproc`` (SubprocVecEnv, one process per env) or ``envpool``
        (``make_envpool_env``)
    :param num_threads: EnvPool's C++ threads (0: one per core); the other backends ignore it
    :param env_kwargs: keyword arguments of an env id's env, e.g. ``max_episode_steps``
    :param wrapper_class: a Gymnasium wrapper around each env (Gymnasium's envs only)
    :return: the envs, none of them rendering
    """
    if vec_env not in VEC_ENVS:
        raise ValueError(f"Unknown vec_env {vec_env!r}: choose one of {', '.join(VEC_ENVS)}.")
    if vec_env == "envpool":
        if not isinstance(env, str):
            raise ValueError(f"vec_env='envpool' builds EnvPool's own envs from an env id, got {env!r}: pass the id.")
        return make_envpool_env(env, n_envs=n_envs, seed=seed, num_threads=num_threads, **(env_kwargs or {}))
    # make_vec_env asks for rgb_array rendering unless told otherwise, and LunarLander then adds a Box2D body for every
    # engine particle, which only render() ages and removes: each step gets slower as an episode goes on. The
    # trajectories are the same either way.
    kwargs = {"render_mode": None, **(env_kwargs or {})} if isinstance(env, str) else None
    vec_env_cls = SubprocVecEnv if vec_env == "subproc" else DummyVecEnv
    return make_vec_env(env, n_envs, seed, env_kwargs=kwargs, wrapper_class=wrapper_class, vec_env_cls=vec_env_cls)
