"""
The learning tests' budgets on the tuning seeds 100-104 (README.md): each seed's deterministic evaluation after
``STEPS`` steps of the test's settings, on one torch thread with torch's distribution checks off, as in the slow tests.

    PYTHONPATH=. python benchmarks/learning_test_budgets/check.py cartpole|recurrent|envpool-gpg|envpool-ppo STEPS
"""

import sys
import time

import torch as th
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy

from sb3_gpg import GPG, RecurrentGPG, make_envpool_env


def main(which: str, steps: int) -> None:
    th.set_num_threads(1)
    th.distributions.Distribution.set_default_validate_args(False)
    for seed in range(100, 105):
        start = time.perf_counter()
        if which == "cartpole":  # tests/test_gpg.py::test_learns_cartpole_within_a_step_budget
            model = GPG("MlpPolicy", "CartPole-v1", seed=seed, device="cpu").learn(steps)
            eval_env, n_episodes = make_vec_env("CartPole-v1", n_envs=1, seed=1000 + seed), 20
        elif which.startswith("envpool"):  # tests/test_envpool.py::test_learns_cartpole_through_envpool
            from stable_baselines3 import PPO

            from tests.test_envpool import THROUGH_ENVPOOL

            env = make_envpool_env("CartPole-v1", n_envs=8, seed=seed, num_threads=1)
            algo = GPG if which == "envpool-gpg" else PPO
            model = algo("MlpPolicy", env, seed=seed, **THROUGH_ENVPOOL).learn(steps)
            eval_env, n_episodes = make_envpool_env("CartPole-v1", n_envs=1, seed=100 + seed), 10
        else:  # tests/test_gpg_recurrent.py::test_learns_cartpole_without_velocities
            from rl_zoo3 import import_envs  # noqa: F401 (registers CartPoleNoVel-v1)

            from tests.test_gpg_recurrent import NOVEL

            env = make_vec_env("CartPoleNoVel-v1", n_envs=8, seed=seed)
            model = RecurrentGPG("MlpLstmPolicy", env, seed=seed, device="cpu", **NOVEL).learn(steps)
            eval_env, n_episodes = make_vec_env("CartPoleNoVel-v1", n_envs=1, seed=100 + seed), 10
        mean, _ = evaluate_policy(model, eval_env, n_eval_episodes=n_episodes, deterministic=True)
        print(f"{which} {steps} seed {seed}: {mean:.1f} ({time.perf_counter() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
