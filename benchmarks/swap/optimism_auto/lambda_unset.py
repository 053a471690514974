"""
A PPO script's swap on MountainCar-v0 that leaves ``gae_lambda`` unset (GPG's ``"auto"``), or sets it: 16 envs x 16
steps under VecNormalize, seed 0, 60,000 steps, one torch thread. Prints how many rollouts took a lambda below 1 (under
``"auto"``), how many the optimism raised (``gpg/optimism_raised``), and the length of the last episodes (200: none
reached the goal).

    python benchmarks/swap/optimism_auto/lambda_unset.py auto
    python benchmarks/swap/optimism_auto/lambda_unset.py 0.95
"""

import sys

import numpy as np
import torch
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecNormalize

from sb3_gpg import GPG


class RolloutStats(BaseCallback):
    """Each rollout's lambda (under ``"auto"``; NaN otherwise) and whether the optimism raised its baselines."""

    def __init__(self):
        super().__init__()
        self.rows: list[tuple[float, float]] = []

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        stats = self.model.rollout_buffer.group_stats
        self.rows.append((stats.get("gae_lambda", np.nan), stats.get("optimism_raised", np.nan)))


def main() -> None:
    torch.set_num_threads(1)
    given = sys.argv[1] if len(sys.argv) > 1 else "auto"
    env = VecNormalize(make_vec_env("MountainCar-v0", n_envs=16, seed=0), gamma=0.99)
    kwargs = {} if given == "auto" else {"gae_lambda": float(given)}
    model = GPG("MlpPolicy", env, n_steps=16, batch_size=256, n_epochs=4, ent_coef=0.0, seed=0, **kwargs)
    stats = RolloutStats()
    model.learn(60_000, callback=stats)
    lambdas, raised = np.array(stats.rows).T
    lengths = [info["l"] for info in model.ep_info_buffer]
    print(
        f"gae_lambda {given}: {len(lambdas)} rollouts, {int(np.sum(lambdas < 1))} below lambda 1, "
        f"{int(np.nansum(raised))} raised; last episodes {np.mean(lengths):.1f} steps (shortest {min(lengths)})"
    )


if __name__ == "__main__":
    main()
