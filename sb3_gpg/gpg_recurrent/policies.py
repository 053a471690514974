# This file is here just to define MlpLstmPolicy/CnnLstmPolicy/MultiInputLstmPolicy
# that work for RecurrentGPG
from sb3_gpg.common.recurrent.policies import (
    RecurrentActorOnlyCnnPolicy,
    RecurrentActorOnlyMultiInputPolicy,
    RecurrentActorOnlyPolicy,
)

MlpLstmPolicy = RecurrentActorOnlyPolicy
CnnLstmPolicy = RecurrentActorOnlyCnnPolicy
MultiInputLstmPolicy = RecurrentActorOnlyMultiInputPolicy
