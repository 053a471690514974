# This file is here just to define MlpLstmPolicy/CnnLstmPolicy/MultiInputLstmPolicy
# that work for MaskableRecurrentGPG
from sb3_gpg.common.maskable_recurrent.policies import (
    MaskableRecurrentActorOnlyCnnPolicy,
    MaskableRecurrentActorOnlyMultiInputPolicy,
    MaskableRecurrentActorOnlyPolicy,
)

MlpLstmPolicy = MaskableRecurrentActorOnlyPolicy
CnnLstmPolicy = MaskableRecurrentActorOnlyCnnPolicy
MultiInputLstmPolicy = MaskableRecurrentActorOnlyMultiInputPolicy
