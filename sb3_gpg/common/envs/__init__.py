from sb3_gpg.common.envs.masked_memory_envs import MaskedCueEnv, MaskedTMazeEnv

__all__ = ["MaskedCueEnv", "MaskedTMazeEnv"]
