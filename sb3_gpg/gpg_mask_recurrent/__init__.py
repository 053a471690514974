from sb3_gpg.gpg_mask_recurrent.gpg_mask_recurrent import MaskableRecurrentGPG
from sb3_gpg.gpg_mask_recurrent.policies import CnnLstmPolicy, MlpLstmPolicy, MultiInputLstmPolicy

__all__ = ["CnnLstmPolicy", "MaskableRecurrentGPG", "MlpLstmPolicy", "MultiInputLstmPolicy"]
