from sb3_gpg.gpg_mask.gpg_mask import MaskableGPG
from sb3_gpg.gpg_mask.policies import CnnPolicy, MlpPolicy, MultiInputPolicy

__all__ = ["CnnPolicy", "MaskableGPG", "MlpPolicy", "MultiInputPolicy"]
