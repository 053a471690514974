"""A training iteration's CPU time on HalfCheetah-v5 under each target of the linear baseline, with RL Zoo's PPO entry
(the swap suite's setting: 1 env, 512 steps, 20 epochs of 64-sample minibatches): both models are built, trained for
8 rollouts (a full memory), then timed over 3 x 8 more rollouts each, taken in turn so that a change of the machine's
load falls on both. One torch thread; CPU seconds per rollout (collection, estimate and update).

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/swap/lambda_target/rollout_cost.py
"""

import time

import torch as th
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecNormalize

from sb3_gpg import GPG

# RL Zoo's PPO entry for HalfCheetah (v4, which the swap suite runs on v5), less its critic's net_arch
PPO_ENTRY = dict(
    n_steps=512,
    batch_size=64,
    gamma=0.98,
    learning_rate=2.0633e-05,
    ent_coef=0.000401762,
    clip_range=0.1,
    n_epochs=20,
    gae_lambda=0.92,
    max_grad_norm=0.8,
    policy_kwargs=dict(log_std_init=-2, ortho_init=False, activation_fn=th.nn.ReLU, net_arch=dict(pi=[256, 256])),
)
ROLLOUTS = 8


def main() -> None:
    th.set_num_threads(1)
    models = {}
    for target in ("returns", "lambda_returns"):
        env = VecNormalize(make_vec_env("HalfCheetah-v5", n_envs=1, seed=100))
        model = GPG("MlpPolicy", env, seed=100, device="cpu", baseline_kwargs={"target": target}, **PPO_ENTRY)
        models[target] = model.learn(ROLLOUTS * model.n_steps)
    seconds = dict.fromkeys(models, 0.0)
    for _ in range(3):
        for target, model in models.items():
            start = time.process_time()
            model.learn(ROLLOUTS * model.n_steps, reset_num_timesteps=False)
            seconds[target] += time.process_time() - start
    for target, total in seconds.items():
        print(f"target {target}: {total / (3 * ROLLOUTS):.3f} CPU s per rollout")


if __name__ == "__main__":
    main()
