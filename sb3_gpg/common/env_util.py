"""
Vectorised environments on a chosen backend: SB3's DummyVecEnv or SubprocVecEnv, or EnvPool's C++ envs.
"""

import difflib

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
    env_id: str, n_envs: int = 1, seed: int | None = None, vec_env: str = "dummy", num_threads: int = 0
) -> VecEnv:
    """
    :param env_id: a Gymnasium (or, for ``envpool``, an EnvPool) environment id
    :param n_envs: number of environments
    :param seed: seed of env 0 (env ``i`` gets ``seed + i``)
    :param vec_env: ``dummy`` (DummyVecEnv), ``subproc`` (SubprocVecEnv, one process per env) or ``envpool``
        (``make_envpool_env``)
    :param num_threads: EnvPool's C++ threads (0: one per core); the other backends ignore it
    :return: the envs, none of them rendering
    """
    if vec_env not in VEC_ENVS:
        raise ValueError(f"Unknown vec_env {vec_env!r}: choose one of {', '.join(VEC_ENVS)}.")
    if vec_env == "envpool":
        return make_envpool_env(env_id, n_envs=n_envs, seed=seed, num_threads=num_threads)
    # make_vec_env asks for rgb_array rendering by default, which slows some envs down (LunarLander keeps a Box2D body
    # per engine particle until render() is called)
    vec_env_cls = SubprocVecEnv if vec_env == "subproc" else DummyVecEnv
    return make_vec_env(env_id, n_envs=n_envs, seed=seed, env_kwargs={"render_mode": None}, vec_env_cls=vec_env_cls)
