"""
Train every entry of hyperparams/gpg.yml through the RL Zoo CLI (python -m sb3_gpg.train) and report the score each
reached, with its steps and wall time: the numbers quoted beside the entries.

Each run evaluates the deterministic policy every fifth of its budget (``--eval-episodes`` episodes, RL Zoo's
EvalCallback); the score reported is the last evaluation. Runs go ``--jobs`` at a time, one process each.

    python scripts/zoo_scores.py --output benchmarks/zoo_scores.md            # every entry
    python scripts/zoo_scores.py --envs CartPole-v1 Acrobot-v1 --jobs 2
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import yaml
from tqdm import tqdm

from sb3_gpg.zoo import GPG_HYPERPARAMS


def train_entry(env_id: str, entry: dict, args: argparse.Namespace, log_folder: str) -> dict:
    n_timesteps = int(float(entry["n_timesteps"]))
    eval_freq = n_timesteps // 5  # in env steps: rl_zoo3 divides it by n_envs for EvalCallback
    command = [
        sys.executable, "-m", "sb3_gpg.train", "--algo", "gpg", "--env", env_id, "-f", log_folder, "--seed", str(args.seed),
        "--eval-freq", str(eval_freq), "--eval-episodes", str(args.eval_episodes), "--num-threads", "1",
    ]  # fmt: skip
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    wall_time = time.perf_counter() - start
    if result.returncode != 0:
        return {"env": env_id, "error": (result.stderr or result.stdout).strip().splitlines()[-1]}
    evaluations = np.load(Path(log_folder) / "gpg" / f"{env_id}_1" / "evaluations.npz")
    curve = evaluations["results"].mean(axis=1)
    return {
        "env": env_id,
        "steps": int(evaluations["timesteps"][-1]),
        "mean": float(curve[-1]),
        "std": float(evaluations["results"][-1].std()),
        "best": float(curve.max()),
        "curve": [round(float(value), 1) for value in curve],
        "wall_time": wall_time,
        "n_envs": entry.get("n_envs", 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="*", help="entries to run (default: all but 'default')")
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--output", type=Path, help="markdown file to write")
    args = parser.parse_args()

    entries = yaml.safe_load(GPG_HYPERPARAMS.read_text())
    env_ids = args.envs or [name for name in entries if name != "default"]
    with tempfile.TemporaryDirectory() as root, ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(train_entry, env_id, entries[env_id], args, os.path.join(root, env_id)) for env_id in env_ids]
        results = []
        for future in tqdm(futures, desc="entries"):  # in the YAML's order
            results.append(future.result())
            tqdm.write(str(results[-1]))

    lines = [
        "# Scores of the hyperparams/gpg.yml entries",
        "",
        f"Command: `python scripts/zoo_scores.py {' '.join(sys.argv[1:])}` — each entry trained once through "
        f"`python -m sb3_gpg.train --algo gpg` (seed {args.seed}, one torch thread, {args.jobs} runs at a time on a "
        f"2-core CPU), evaluated every fifth of its budget over {args.eval_episodes} deterministic episodes.",
        "",
        "| env | n_envs | steps | last evaluation | best evaluation | evaluations along training | wall time |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['env']} | | | failed: {r['error']} | | | |")
            continue
        lines.append(
            f"| {r['env']} | {r['n_envs']} | {r['steps']:,} | {r['mean']:.1f} +- {r['std']:.1f} | {r['best']:.1f} | "
            f"{', '.join(map(str, r['curve']))} | {r['wall_time'] / 60:.1f} min |"
        )
    report = "\n".join(lines) + "\n"
    print(report)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(report)


if __name__ == "__main__":
    main()
