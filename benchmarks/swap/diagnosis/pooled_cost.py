"""
The CPU time of one rollout's estimate under the constructor's linear baseline and under the Ant-v5 screens'
candidates (the pooled level or the trend of the levels, 32 remembered rollouts uncapped, 8 folds or the default's 2),
on random rollouts of Ant-v5's shape (one env, 2,048 steps, 105 dimensions), the memories full: the median of 7
rollouts' ``time.process_time``, which other processes on the machine barely move. README.md, "The fit's generalisation
on PPO's saved Ant-v5 rollouts" and "Levels on a trend"; ``--shape`` gives another rollout's steps, envs and
dimensions, for example CartPole-v1's at the paper's group sizes (``../../trend_rule/README.md``).

    python benchmarks/swap/diagnosis/pooled_cost.py
    python benchmarks/swap/diagnosis/pooled_cost.py --shape 128 64 4 --variants constructor trend_long_folds8
"""

import argparse
import time

import numpy as np
import torch as th
from gymnasium import spaces

from sb3_gpg_bench.baseline_variants import variant_buffers, variants_explained

N_STEPS, N_ENVS, DIM = 2048, 1, 105
LONG = {"memory": 32, "recency": 0.9, "memory_weight": None}
VARIANTS = {
    "constructor": {},
    "pooled_long_folds8": {**LONG, "n_folds": 8, "level": "pooled"},
    "trend_long_folds8": {**LONG, "n_folds": 8, "level": "trend"},
    "trend_long": {**LONG, "level": "trend"},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", type=int, nargs=3, default=(N_STEPS, N_ENVS, DIM), metavar=("STEPS", "ENVS", "DIM"))
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    args = parser.parse_args()
    n_steps, n_envs, dim = args.shape
    th.set_num_threads(1)
    rng = np.random.default_rng(0)
    box = spaces.Box(-np.inf, np.inf, (dim,), np.float32)

    def rollout() -> tuple[np.ndarray, ...]:
        obs = rng.normal(size=(n_steps, n_envs, dim)).astype(np.float32)
        starts = (rng.random((n_steps, n_envs)) < 1 / 200).astype(np.float32)
        rewards = (obs[..., 0] + rng.normal(size=(n_steps, n_envs))).astype(np.float32)
        return obs, rewards, starts, np.zeros(n_envs, dtype=bool), rng.normal(size=(n_envs, dim)).astype(np.float32)

    for name in args.variants:
        built = variant_buffers({name: VARIANTS[name]}, n_steps, n_envs, box, 0.99)
        for _ in range(34):  # the memories filled
            variants_explained(built, *rollout())
        times = []
        for _ in range(7):
            arrays = rollout()
            start = time.process_time()
            variants_explained(built, *arrays)
            times.append(time.process_time() - start)
        print(f"{name}: {np.median(times):.3f} s of CPU per rollout")


if __name__ == "__main__":
    main()
