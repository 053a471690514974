from sb3_gpg.gpg_recurrent.gpg_recurrent import RecurrentGPG
from sb3_gpg.gpg_recurrent.policies import CnnLstmPolicy, MlpLstmPolicy, MultiInputLstmPolicy

__all__ = ["CnnLstmPolicy", "MlpLstmPolicy", "MultiInputLstmPolicy", "RecurrentGPG"]
