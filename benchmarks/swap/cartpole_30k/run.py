"""GPG's docs page's learning numbers: GPG("MlpPolicy", "CartPole-v1", seed=s) for seeds 0-7, 30k steps, 20 episodes."""

import sys

import torch as th
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy

from sb3_gpg import GPG

th.set_num_threads(1)
baseline = sys.argv[1]  # "default" (the constructor's) or a baseline to name
for seed in range(8):
    model = GPG(
        "MlpPolicy", "CartPole-v1", seed=seed, device="cpu", **({} if baseline == "default" else {"baseline": baseline})
    )
    model.learn(30_000)
    # the evaluation of tests/test_gpg.py's learning test
    mean, _ = evaluate_policy(model, make_vec_env("CartPole-v1", n_envs=1, seed=1000), n_eval_episodes=20, deterministic=True)
    print(baseline, seed, mean, flush=True)
