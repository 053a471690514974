# This file is here just to define MlpPolicy/CnnPolicy/MultiInputPolicy
# that work for GPG
from sb3_gpg.common.policies import ActorOnlyCnnPolicy, ActorOnlyMultiInputPolicy, ActorOnlyPolicy

MlpPolicy = ActorOnlyPolicy
CnnPolicy = ActorOnlyCnnPolicy
MultiInputPolicy = ActorOnlyMultiInputPolicy
