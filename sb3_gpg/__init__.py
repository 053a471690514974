import importlib
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

# Where each name is defined: imported on first use (``from sb3_gpg import GPG`` as before), so that the command lines,
# whose modules are in this package, print their help without importing torch
_DEFINED_IN = {
    "GPG": "sb3_gpg.gpg",
    "BaseGroupRolloutBuffer": "sb3_gpg.common.buffers",
    "EnvPoolVecEnv": "sb3_gpg.common.vec_env.envpool",
    "GroupDictRolloutBuffer": "sb3_gpg.common.buffers",
    "GroupOptions": "sb3_gpg.estimator",
    "GroupRolloutBuffer": "sb3_gpg.common.buffers",
    "MaskableGPG": "sb3_gpg.gpg_mask",
    "MaskableRecurrentGPG": "sb3_gpg.gpg_mask_recurrent",
    "RecurrentGPG": "sb3_gpg.gpg_recurrent",
    "make_envpool_env": "sb3_gpg.common.vec_env.envpool",
}

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


def __getattr__(name: str) -> Any:
    if name not in _DEFINED_IN:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_DEFINED_IN[name]), name)
    globals()[name] = value  # found here from now on, without this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
