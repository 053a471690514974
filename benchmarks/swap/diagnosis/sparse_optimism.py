"""
Why PPO reaches the goal of a sparse -1-per-step task within a few rollouts and the swap often does not: a test of
one explanation, a critic that starts above the returns (SB3 initialises the value head's output near 0 while every
return is negative, so the states a policy has visited least keep the highest values, and the advantages push towards
them). PPO with rl_zoo3's entry (VecNormalize included) is trained with its value head's output bias set to each level
given, and the one-word swap (GPG with the same entry) beside it; per run, the first training step at which an episode
ends before the time limit (the goal reached), within a budget. Tuning seeds only.

    python benchmarks/swap/diagnosis/sparse_optimism.py --env MountainCar-v0 --biases 0 -3 -4 -6 -10
    python benchmarks/swap/diagnosis/sparse_optimism.py --env Acrobot-v1 --biases 0 -3 -6 -10
"""

import argparse
import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecNormalize

from sb3_gpg import GPG
from sb3_gpg_bench.suite import zoo_entry

OUT = Path(__file__).parent / "sparse_optimism"
PPO_KEYS = ("n_steps", "batch_size", "gae_lambda", "gamma", "n_epochs", "ent_coef", "learning_rate", "clip_range")


class FirstGoal(BaseCallback):
    """Stops training at the first episode that ends before the time limit and records its step."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit, self.step = limit, None

    def _on_step(self) -> bool:
        if any(info.get("episode", {}).get("l", self.limit) < self.limit for info in self.locals["infos"]):
            self.step = self.num_timesteps
            return False
        return True


def first_goal(env_id: str, algo: str, bias: float | None, seed: int, budget: int) -> int | None:
    """:return: the first step at which an episode reaches the goal, or None within ``budget``"""
    entry = zoo_entry("ppo", env_id)[0]
    env = make_vec_env(env_id, n_envs=entry["n_envs"], seed=seed)
    if entry.get("normalize"):
        env = VecNormalize(env, gamma=entry.get("gamma", 0.99))
    kwargs = {key: entry[key] for key in PPO_KEYS if key in entry}
    model = (PPO if algo == "ppo" else GPG)("MlpPolicy", env, seed=seed, device="cpu", **kwargs)
    if bias is not None:
        with torch.no_grad():
            model.policy.value_net.bias.fill_(bias)
    callback = FirstGoal(gym.spec(env_id).max_episode_steps)
    model.learn(budget, callback=callback)
    return callback.step


def report(env_id: str) -> str:
    """:return: the table of ``sparse_optimism/<env_id>.json``'s runs, with each arm's median first goal"""
    saved = json.loads((OUT / f"{env_id}.json").read_text())
    args, results = saved["args"], saved["first_goal"]
    rows = [
        f"{env_id}, rl_zoo3's PPO entry, seeds {', '.join(map(str, args['seeds']))}, {args['budget']:,} steps at most",
        "",
        "| algorithm | value head's initial output | runs reaching the goal | median first goal "
        "| first goal, steps (per seed) |",
        "|---|---|---|---|---|",
    ]
    for name, steps in results.items():
        algo, bias = name.split(" ")
        label, level = ("PPO", f"{float(bias):+g}") if algo == "ppo" else ("GPG (the swap)", "")
        reached = [step for step in steps if step is not None]
        median = np.median([np.inf if step is None else step for step in steps])
        shown = ", ".join("never" if step is None else f"{step:,}" for step in steps)
        median_shown = "never" if np.isinf(median) else f"{median:,.0f}"
        rows.append(f"| {label} | {level} | {len(reached)} of {len(steps)} | {median_shown} | {shown} |")
    return "\n".join(rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="MountainCar-v0")
    parser.add_argument("--biases", nargs="+", type=float, default=[0.0, -3.0, -4.0, -6.0, -10.0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[100, 101, 102, 103, 104, 105])
    parser.add_argument("--budget", type=int, default=100_000)
    parser.add_argument("--report", action="store_true", help="only rewrite the table from the saved runs")
    args = parser.parse_args()
    if not args.report:
        torch.set_num_threads(1)
        arms = [("ppo", bias) for bias in args.biases] + [("gpg", None)]
        results = {}
        for algo, bias in arms:
            results[f"{algo} {bias}"] = [first_goal(args.env, algo, bias, seed, args.budget) for seed in args.seeds]
            print(algo, bias, results[f"{algo} {bias}"], flush=True)
        OUT.mkdir(exist_ok=True)
        saved = {"args": {key: value for key, value in vars(args).items() if key != "report"}, "first_goal": results}
        (OUT / f"{args.env}.json").write_text(json.dumps(saved, indent=1) + "\n")
    table = report(args.env)
    (OUT / f"{args.env}.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
