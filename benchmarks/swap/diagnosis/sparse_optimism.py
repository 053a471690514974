"""
Why PPO reaches the goal of a sparse -1-per-step task within a few rollouts and the swap often does not: a test of
one explanation, a critic that starts above the returns (SB3 initialises the value head's output near 0 while every
return is negative, so the states a policy has visited least keep the highest values, and the advantages push towards
them). PPO with rl_zoo3's entry (VecNormalize included) is trained with its value head's output bias set to each level
given, and the one-word swap (GPG with the same entry) beside it; per run, the first training step at which an episode
ends by reaching the goal (terminated, not cut by the time limit), within a budget, and for PPO the mean of its
critic's values over its last rollout (where a run that never reaches the goal settles). Tuning seeds only; the arms
of each call are merged into the task's saved runs.

    python benchmarks/swap/diagnosis/sparse_optimism.py --env MountainCar-v0 --biases 2 0 -3 -4 -6 -10
    python benchmarks/swap/diagnosis/sparse_optimism.py --env Acrobot-v1 --biases 2 0 -3 -6 -10

The screen of the linear baseline's optimism (``baseline_kwargs={"optimism": True}``, the fix the table suggests),
beside the arms above:

    python benchmarks/swap/diagnosis/sparse_optimism.py --env MountainCar-v0 --biases --gpg-arms optimism
    python benchmarks/swap/diagnosis/sparse_optimism.py --env Acrobot-v1 --biases --gpg-arms optimism
"""

import argparse
import json
from pathlib import Path

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
# the entry's keys that are not PPO's arguments, handled here
SETUP_KEYS = ("normalize", "n_envs", "n_timesteps", "policy")


class FirstGoal(BaseCallback):
    """Stops training at the first episode that reaches the goal (ends without the time limit's cut): its step."""

    def __init__(self) -> None:
        super().__init__()
        self.step: int | None = None

    def _on_step(self) -> bool:
        # SB3's VecEnvs mark an episode cut by the time limit (and not terminated) with TimeLimit.truncated
        if any("episode" in info and not info.get("TimeLimit.truncated", False) for info in self.locals["infos"]):
            self.step = self.num_timesteps
            return False
        return True


def first_goal(env_id: str, algo: str, bias: float | None, seed: int, budget: int) -> tuple[int | None, float | None]:
    """
    :param env_id: a task of rl_zoo3's ``ppo.yml`` whose entry has no key but ``PPO_KEYS`` and ``SETUP_KEYS``
    :param algo: ``"ppo"``, ``"gpg"`` (the swap) or ``"gpg_optimism"`` (the swap with the linear baseline's optimism)
    :param bias: the value head's initial output (PPO), or None for SB3's initialisation
    :param seed: the run's seed
    :param budget: the steps at most
    :return: the first step at which an episode reaches the goal (None within ``budget``), and PPO's mean value over
        its last rollout (None for GPG)
    """
    entry = zoo_entry("ppo", env_id)[0]
    unhandled = set(entry) - set(PPO_KEYS) - set(SETUP_KEYS)
    if unhandled or not isinstance(entry.get("normalize", False), bool):
        raise ValueError(f"{env_id}'s entry has settings this script does not pass on: {sorted(unhandled)} {entry}")
    env = make_vec_env(env_id, n_envs=entry["n_envs"], seed=seed)
    if entry.get("normalize"):
        env = VecNormalize(env, gamma=entry.get("gamma", 0.99))
    kwargs = {key: entry[key] for key in PPO_KEYS if key in entry}
    if algo == "gpg_optimism":
        kwargs["baseline_kwargs"] = {"optimism": True}
    model = (PPO if algo == "ppo" else GPG)("MlpPolicy", env, seed=seed, device="cpu", **kwargs)
    if bias is not None:
        with torch.no_grad():
            model.policy.value_net.bias.fill_(bias)
    callback = FirstGoal()
    model.learn(budget, callback=callback)
    level = float(model.rollout_buffer.values.mean()) if algo == "ppo" else None
    return callback.step, level


def report(env_id: str) -> str:
    """
    :param env_id: the task
    :return: the table of ``sparse_optimism/<env_id>.json``'s runs, with each arm's median first goal
    """
    saved = json.loads((OUT / f"{env_id}.json").read_text())
    args, results = saved["args"], saved["first_goal"]
    rows = [
        f"{env_id}, rl_zoo3's PPO entry, seeds {', '.join(map(str, args['seeds']))}, {args['budget']:,} steps at most",
        "",
        "| algorithm | value head's initial output | runs reaching the goal | median first goal "
        "| first goal, steps (per seed) | critic's mean value, last rollout, runs never reaching the goal |",
        "|---|---|---|---|---|---|",
    ]

    def order(name: str) -> tuple[str, float]:
        # PPO's arms from the highest initial output down, then the swap's, then the swap's with optimism
        algo, bias = name.split(" ")
        return ("", -float(bias)) if algo == "ppo" else (algo, 0.0)

    for name in sorted(results, key=order):
        steps, levels = results[name], saved["levels"][name]
        algo, bias = name.split(" ")
        labels = {"gpg": "GPG (the swap)", "gpg_optimism": "GPG (the swap), optimism on"}
        label, level = ("PPO", f"{float(bias):+g}") if algo == "ppo" else (labels[algo], "")
        reached = [step for step in steps if step is not None]
        median = np.median([np.inf if step is None else step for step in steps])
        shown = ", ".join("never" if step is None else f"{step:,}" for step in steps)
        median_shown = "never" if np.isinf(median) else f"{median:,.0f}"
        settled = [value for step, value in zip(steps, levels, strict=True) if step is None]
        settled_shown = f"{np.mean(settled):.2f} ({len(settled)})" if settled and None not in settled else ""
        rows.append(f"| {label} | {level} | {len(reached)} of {len(steps)} | {median_shown} | {shown} | {settled_shown} |")
    return "\n".join(rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="MountainCar-v0")
    parser.add_argument("--biases", nargs="*", type=float, default=[0.0, -3.0, -4.0, -6.0, -10.0])
    parser.add_argument("--gpg-arms", nargs="*", choices=["swap", "optimism"], default=["swap"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[100, 101, 102, 103, 104, 105])
    parser.add_argument("--budget", type=int, default=100_000)
    parser.add_argument("--report", action="store_true", help="only rewrite the table from the saved runs")
    args = parser.parse_args()
    if not args.report:
        torch.set_num_threads(1)
        gpg_arms = {"swap": "gpg", "optimism": "gpg_optimism"}
        arms = [("ppo", bias) for bias in args.biases] + [(gpg_arms[arm], None) for arm in args.gpg_arms]
        path = OUT / f"{args.env}.json"
        saved = json.loads(path.read_text()) if path.exists() else {"args": {}, "first_goal": {}, "levels": {}}
        if saved["args"] and (saved["args"]["seeds"], saved["args"]["budget"]) != (args.seeds, args.budget):
            raise ValueError(f"{path} holds runs of other seeds or budget: {saved['args']}")
        saved["args"] = {"seeds": args.seeds, "budget": args.budget}
        for algo, bias in arms:
            name = f"{algo} {bias}"
            runs = [first_goal(args.env, algo, bias, seed, args.budget) for seed in args.seeds]
            saved["first_goal"][name], saved["levels"][name] = [step for step, _ in runs], [v for _, v in runs]
            print(name, runs, flush=True)
        OUT.mkdir(exist_ok=True)
        path.write_text(json.dumps(saved, indent=1) + "\n")
    table = report(args.env)
    (OUT / f"{args.env}.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
