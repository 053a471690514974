"""
Why the held-out explained variance of the sound default falls far below -1 on the one-env swap tasks: the logged
value (``train/baseline_explained_variance``) is per rollout, and a rollout of 8 samples (MountainCarContinuous-v0,
1 env x 8 steps) or of 512 steps of 1,000-step episodes (HalfCheetah-v5, 1 env x 512 steps) holds returns so alike
that small errors dwarf their variance. This re-runs a swap run with ``critic_variants.HeldOutResiduals``, which
changes nothing in training (the evaluations are checked against the committed run's), and writes, per quarter of
training: the mean of the per-rollout values (what the rule script reads), the explained variance pooled over the
quarter's rollouts, and how much of the returns' pooled variance lies within rollouts.

    python benchmarks/swap/sound_default/ev_pooled.py run --envs MountainCarContinuous-v0 HalfCheetah-v5
    python benchmarks/swap/sound_default/ev_pooled.py run --envs InvertedDoublePendulum-v5 --seed 105 --budget 1000000
    python benchmarks/swap/sound_default/ev_pooled.py report
"""

import argparse
import gzip
import json
import os
import sys
from pathlib import Path

import numpy as np

from sb3_gpg_bench.suite import Run, budget_of, train
from sb3_gpg_bench.suites import SUITES, Setting

HERE = Path(__file__).resolve().parent
OUT = HERE / "ev_pooled"
SETTING = "gpg_swap_sound"
CALLBACK = "callback:'sb3_gpg_bench.critic_variants.HeldOutResiduals'"
QUARTERS = 4


def run(env_id: str, seed: int, budget: int | None) -> None:
    suite = SUITES["swap"]
    setting = next(setting for setting in suite.settings if setting.name == SETTING)
    traced = Setting(setting.name, setting.algo, (*setting.params, CALLBACK), setting.base)
    OUT.mkdir(exist_ok=True)
    records = OUT / f"{env_id}__seed{seed}.jsonl"
    records.unlink(missing_ok=True)
    os.environ["HELD_OUT_RESIDUALS"] = str(records)
    files = train(Run(env_id, traced, seed), suite.eval_seed_offset, budget_of(env_id, budget))
    (OUT / f"{env_id}__seed{seed}_evaluations.npz").write_bytes(files["evaluations.npz"])
    records.with_suffix(".jsonl.gz").write_bytes(gzip.compress(records.read_bytes(), mtime=0))
    records.unlink()


def pooled(rollouts: list[dict]) -> tuple[float, float, float]:
    """:return: the per-rollout explained variance's mean, the pooled one, and the share of variance within rollouts"""
    n = np.array([r["n"] for r in rollouts], dtype=float)
    per_rollout = [1 - r["residuals_var"] / r["returns_var"] for r in rollouts if r["returns_var"] > 0]

    def total(name: str) -> tuple[float, float]:
        means, variances = np.array([r[f"{name}_mean"] for r in rollouts]), np.array([r[f"{name}_var"] for r in rollouts])
        grand = np.average(means, weights=n)
        within = np.average(variances, weights=n)
        return within + np.average((means - grand) ** 2, weights=n), within

    returns_var, returns_within = total("returns")
    residuals_var, _ = total("residuals")
    return float(np.mean(per_rollout)), 1 - residuals_var / returns_var, returns_within / returns_var


def report() -> str:
    lines = [
        "| run | quarter | rollouts | per-rollout explained variance, mean (logged) | pooled over the quarter | "
        "returns' variance within rollouts |",
        "|---|---|---|---|---|---|",
    ]
    for path in sorted(OUT.glob("*.jsonl.gz")):
        rollouts = [json.loads(line) for line in gzip.decompress(path.read_bytes()).decode().splitlines()]
        rollouts = [r for r in rollouts if r["n"] > 1]
        budget = max(r["steps"] for r in rollouts)
        for quarter in range(QUARTERS):
            low, high = budget * quarter / QUARTERS, budget * (quarter + 1) / QUARTERS
            inside = [r for r in rollouts if low < r["steps"] <= high or (quarter == 0 and r["steps"] == 0)]
            mean, pooled_value, within = pooled(inside)
            name = path.name.removesuffix(".jsonl.gz")
            lines.append(f"| {name} | {quarter + 1} | {len(inside)} | {mean:.2f} | {pooled_value:.2f} | {within:.1%} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["run", "report"])
    parser.add_argument("--envs", nargs="+", default=["MountainCarContinuous-v0", "HalfCheetah-v5"])
    parser.add_argument("--seed", type=int, default=100)
    parser.add_argument("--budget", type=int, help="the steps the committed run trained (its --budget), else RL Zoo's")
    args = parser.parse_args()
    if args.command == "run":
        for env_id in args.envs:
            run(env_id, args.seed, args.budget)
    table = report()
    (OUT / "ev_pooled.md").write_text(table)
    sys.stdout.write(table)


if __name__ == "__main__":
    main()
