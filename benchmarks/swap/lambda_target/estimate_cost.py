"""The estimate's cost per rollout under each target of the linear baseline (the constructor's estimator otherwise), on
random rollouts with a full memory: seconds per estimate, the median of the last four of six, one thread.

    OMP_NUM_THREADS=1 python benchmarks/swap/lambda_target/estimate_cost.py 2048 32 24    # BipedalWalker-v3's rollout
    OMP_NUM_THREADS=1 python benchmarks/swap/lambda_target/estimate_cost.py 128 64 4      # the paper's 64 x 128
"""

import sys
import time

import numpy as np

from sb3_gpg.estimator import GroupOptions, estimate
from sb3_gpg.estimator.baseline_memory import BaselineMemory
from sb3_gpg.estimator.returns import episode_times


def main() -> None:
    n_steps, n_envs, obs_dim = (int(value) for value in sys.argv[1:4])
    for target in ("returns", "lambda_returns"):
        rng = np.random.default_rng(0)
        kwargs = {"target": target}
        options = GroupOptions(baseline="linear", truncated_returns="bootstrap", baseline_kwargs=kwargs).checked()
        memory, carried, seconds = BaselineMemory(8), np.zeros(n_envs, dtype=np.int64), []
        for _ in range(6):
            observations = rng.normal(size=(n_steps, n_envs, obs_dim)).astype(np.float32)
            rewards = rng.normal(size=(n_steps, n_envs)).astype(np.float32)
            starts = (rng.random((n_steps, n_envs)) < 1 / 500).astype(np.float32)
            times = episode_times(starts, carried)
            last_obs = rng.normal(size=(n_envs, obs_dim))
            start = time.perf_counter()
            result = estimate(observations, rewards, starts, np.zeros(n_envs, dtype=bool), last_obs, episode_times=times,
                              options=options, gamma=0.99, gae_lambda=0.95, memory=memory)  # fmt: skip
            seconds.append(time.perf_counter() - start)
            memory.rollouts.append(result.memory_entry)
            memory.last_fit = result.last_fit
            carried = times[-1] + 1
        print(f"{n_steps} steps x {n_envs} envs, {obs_dim} dims, target {target}: {np.median(seconds[2:]):.3f} s")


if __name__ == "__main__":
    main()
