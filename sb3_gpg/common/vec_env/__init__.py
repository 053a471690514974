from sb3_gpg.common.vec_env.envpool import EnvPoolVecEnv, make_envpool_env

__all__ = ["EnvPoolVecEnv", "make_envpool_env"]
