import os

from sb3_gpg.common.buffers import BaseGroupRolloutBuffer, GroupDictRolloutBuffer, GroupRolloutBuffer
from sb3_gpg.common.vec_env.envpool import EnvPoolVecEnv, make_envpool_env
from sb3_gpg.estimator import GroupOptions
from sb3_gpg.gpg import GPG
from sb3_gpg.gpg_mask import MaskableGPG
from sb3_gpg.gpg_mask_recurrent import MaskableRecurrentGPG
from sb3_gpg.gpg_recurrent import RecurrentGPG

# Read version from file
version_file = os.path.join(os.path.dirname(__file__), "version.txt")
with open(version_file) as file_handler:
    __version__ = file_handler.read().strip()

__all__ = [
    "GPG",
    "BaseGroupRolloutBuffer",
    "EnvPoolVecEnv",
    "GroupDictRolloutBuffer",
    "GroupOptions",
    "GroupRolloutBuffer",
    "MaskableGPG",
    "MaskableRecurrentGPG",
    "RecurrentGPG",
    "make_envpool_env",
]
