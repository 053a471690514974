from sb3_gpg.gpg.gpg import GPG
from sb3_gpg.gpg.policies import CnnPolicy, MlpPolicy, MultiInputPolicy

__all__ = ["GPG", "CnnPolicy", "MlpPolicy", "MultiInputPolicy"]
