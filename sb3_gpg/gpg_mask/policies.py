# This file is here just to define MlpPolicy/CnnPolicy/MultiInputPolicy
# that work for MaskableGPG
from sb3_gpg.common.maskable.policies import (
    MaskableActorOnlyCnnPolicy,
    MaskableActorOnlyMultiInputPolicy,
    MaskableActorOnlyPolicy,
)

MlpPolicy = MaskableActorOnlyPolicy
CnnPolicy = MaskableActorOnlyCnnPolicy
MultiInputPolicy = MaskableActorOnlyMultiInputPolicy
