"""
What the observation's size costs: seconds per iteration and peak resident memory of PPO and GPG (its default
estimator, and the time bins) on Box observations of D dimensions, side by side in one run.

Each (algorithm, D) trains in a process of its own (one torch thread), so that its peak memory is its own: 8 envs x
256 steps of a task with random observations, Discrete(2) actions and 200-step episodes, SB3's PPO defaults for both
algorithms (batch 64, 10 epochs, a 64x64 MLP), one iteration to warm up, then ``--iterations`` timed.

    python scripts/benchmark_obs_size.py --output benchmarks/speed_obs_size.md
"""

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

DIMS = (4, 17, 100, 1000, 3000, 10000)
SETTINGS = {"PPO": {}, "GPG default": {}, "GPG bins": {"baseline": "bins"}}


def child(setting: str, obs_dim: int, iterations: int, seed: int) -> dict:
    import gymnasium as gym
    import numpy as np
    import torch as th
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    from sb3_gpg import GPG

    th.set_num_threads(1)

    class RandomObservations(gym.Env):
        def __init__(self):
            self.observation_space = gym.spaces.Box(-np.inf, np.inf, (obs_dim,), np.float32)
            self.action_space = gym.spaces.Discrete(2)
            self.rng, self.t = np.random.default_rng(seed), 0

        def reset(self, *, seed=None, options=None):
            self.t = 0
            return self.rng.normal(size=obs_dim).astype(np.float32), {}

        def step(self, action):
            self.t += 1
            obs = self.rng.normal(size=obs_dim).astype(np.float32)
            return obs, float(action) + self.rng.normal(), False, self.t >= 200, {}

    env = DummyVecEnv([RandomObservations for _ in range(8)])
    algorithm = PPO if setting == "PPO" else GPG
    model = algorithm("MlpPolicy", env, n_steps=256, seed=seed, device="cpu", **SETTINGS[setting])
    model.learn(2048)  # warm-up iteration
    start = time.perf_counter()
    model.learn(2048 * iterations, reset_num_timesteps=False)
    seconds = (time.perf_counter() - start) / iterations
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"setting": setting, "obs_dim": obs_dim, "seconds_per_iteration": seconds, "peak_mb": peak_mb}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dims", type=int, nargs="*", default=list(DIMS))
    parser.add_argument("--output", type=Path)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]), args.iterations, args.seed)))
        return
    results, loads = [], []
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    for obs_dim in args.dims:
        for setting in SETTINGS:
            loads.append(os.getloadavg()[0])
            command = [sys.executable, __file__, "--child", setting, str(obs_dim), "--iterations", str(args.iterations)]
            output = subprocess.run(command, check=True, capture_output=True, text=True, env=environment).stdout
            results.append(json.loads(output.strip().splitlines()[-1]))
            print(results[-1], flush=True)
    lines = [
        "# What the observation's size costs",
        "",
        f"Command: `python scripts/benchmark_obs_size.py{' --output ' + str(args.output) if args.output else ''}`",
        "",
        f"Seconds per iteration (mean of {args.iterations} after one to warm up) and peak resident memory of the "
        "training process, 8 envs x 256 steps, random Box observations of D dimensions, Discrete(2) actions, SB3's PPO "
        "defaults for both algorithms, one torch and one BLAS thread, each in a process of its own, one after the other. "
        f"1-minute load average while it ran: {min(loads):.1f} to {max(loads):.1f} on {os.cpu_count()} cores. "
        f"Machine: {platform.machine()}, Python {platform.python_version()}.",
        "",
        "| D | PPO s/iter | PPO MB | GPG default s/iter | GPG default MB | GPG bins s/iter | GPG bins MB "
        "| default/PPO time | default/PPO memory |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for obs_dim in args.dims:
        row = {r["setting"]: r for r in results if r["obs_dim"] == obs_dim}
        ppo, default, bins = row["PPO"], row["GPG default"], row["GPG bins"]
        lines.append(
            f"| {obs_dim:,} | {ppo['seconds_per_iteration']:.2f} | {ppo['peak_mb']:.0f} | "
            f"{default['seconds_per_iteration']:.2f} | {default['peak_mb']:.0f} | {bins['seconds_per_iteration']:.2f} | "
            f"{bins['peak_mb']:.0f} | {default['seconds_per_iteration'] / ppo['seconds_per_iteration']:.2f} | "
            f"{default['peak_mb'] / ppo['peak_mb']:.2f} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.output:
        args.output.write_text(text)
        args.output.with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
