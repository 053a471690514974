"""
Digests of training: for several configurations (every algorithm, the estimator's options, VecNormalize, gSDE), the
SHA-256 of the policy's parameters and the last advantages after four iterations. Run against two checkouts to check
that a change leaves training unchanged to the bit:

    PYTHONPATH=/path/to/old/checkout python scripts/training_digest.py > old.txt
    python scripts/training_digest.py > new.txt && diff old.txt new.txt
"""

import hashlib
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import torch as th
from sb3_contrib.common.envs import InvalidActionEnvDiscrete
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecNormalize

import sb3_gpg
from sb3_gpg import GPG, MaskableGPG, RecurrentGPG


def cartpole(n_envs: int) -> Any:
    return make_vec_env("CartPole-v1", n_envs=n_envs, seed=0)


CASES: dict[str, Callable[[], Any]] = {
    "cartpole-default": lambda: GPG("MlpPolicy", cartpole(4), n_steps=64, batch_size=64, seed=0),
    "cartpole-loo-min2-binstd": lambda: GPG("MlpPolicy", cartpole(4), n_steps=64, batch_size=64, seed=0, leave_one_out=True,
                                            min_bin_count=2, advantage_scale="bin_std"),
    "cartpole-mask-spatialtime": lambda: GPG("MlpPolicy", cartpole(4), n_steps=64, batch_size=32, seed=0,
                                             truncated_returns="mask", binning="spatial_time", bin_size=0.5),
    "pendulum-bootstrap-norm": lambda: GPG("MlpPolicy", VecNormalize(make_vec_env("Pendulum-v1", n_envs=4, seed=0)),
                                           n_steps=64, batch_size=64, seed=0, truncated_returns="bootstrap", use_sde=True),
    "maskable": lambda: MaskableGPG("MlpPolicy", make_vec_env(lambda: InvalidActionEnvDiscrete(dim=8, n_invalid_actions=3),
                                                              n_envs=2, seed=0), n_steps=64, batch_size=32, seed=0),
    "recurrent-bootstrap": lambda: RecurrentGPG("MlpLstmPolicy", cartpole(2), n_steps=64, batch_size=32, seed=0,
                                                truncated_returns="bootstrap", n_epochs=2),
    "recurrent-mask": lambda: RecurrentGPG("MlpLstmPolicy", cartpole(2), n_steps=32, batch_size=16, seed=0,
                                           truncated_returns="mask", n_epochs=2),
}  # fmt: skip


def digest(model: GPG) -> str:
    """:return: the first 16 hex digits of the SHA-256 of the policy's parameters and the last rollout's advantages"""
    sha = hashlib.sha256()
    for parameter in model.policy.parameters():
        sha.update(parameter.detach().numpy().tobytes())
    sha.update(np.asarray(model.rollout_buffer.advantages).tobytes())
    return sha.hexdigest()[:16]


def main() -> None:
    th.set_num_threads(1)
    warnings.simplefilter("ignore")
    print(f"sb3_gpg from {sb3_gpg.__file__}", file=sys.stderr)
    for name, make in CASES.items():
        model = make()
        model.learn(4 * model.n_steps * model.n_envs)
        print(name, digest(model))


if __name__ == "__main__":
    main()
