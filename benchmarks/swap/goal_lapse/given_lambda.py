"""
Whether a checkout trains Acrobot-v1 as another does, with a lambda given or under "auto": 10 rollouts of the entry's
shape (16 envs x 256 steps, VecNormalize, gamma 0.99, 4 epochs), one thread; prints the digest of the policy's
parameters and what the memory holds of the goal. Run it from each checkout and compare:

    PYTHONPATH=/path/to/checkout python benchmarks/swap/goal_lapse/given_lambda.py 0.94 100
    PYTHONPATH=/path/to/checkout python benchmarks/swap/goal_lapse/given_lambda.py auto 100
"""

import hashlib
import sys

import torch as th
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecNormalize

from sb3_gpg import GPG


def main() -> None:
    th.set_num_threads(1)
    gae_lambda: float | str = sys.argv[1] if sys.argv[1] == "auto" else float(sys.argv[1])
    seed = int(sys.argv[2])
    env = VecNormalize(make_vec_env("Acrobot-v1", n_envs=16, seed=seed), gamma=0.99)
    model = GPG("MlpPolicy", env, n_steps=256, gae_lambda=gae_lambda, gamma=0.99, n_epochs=4, seed=seed, device="cpu")
    model.learn(16 * 256 * 10)
    sha = hashlib.sha256()
    for parameter in model.policy.parameters():
        sha.update(parameter.detach().numpy().tobytes())
    memory = model.rollout_buffer.baseline_memory
    since = getattr(memory, "limits_since_goal", "-")
    print(f"{gae_lambda} {seed} {sha.hexdigest()[:16]} goal seen {memory.goal_seen}, episodes to the limit since {since}")


if __name__ == "__main__":
    main()
