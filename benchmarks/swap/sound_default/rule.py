"""The rule of the sound default's swap check (README.md): per task, the sound default (gpg_swap_sound, this folder's
runs) against the previous default (gpg_swap_memory_recency0.8, ../default_memory/runs) on the same seeds, the spread
being the larger std over those seeds or, with one seed, the previous default's std over its six; then both settings'
IQM of PPO-normalised final evaluations with 95% bootstrap intervals (PPO's seeds 100-101 as the scale); then the
sound default's held-out explained variance (train/baseline_explained_variance) over each quarter of training, its
mean (the target's) and its median (robust to the rollouts of one env whose returns barely vary: ev_pooled.py).

    python benchmarks/swap/sound_default/rule.py 100          # the seeds the sound default has run
    python benchmarks/swap/sound_default/rule.py --guide 100 101 104 105    # the swap guide's table (docs/guide/swap_ppo.rst)
"""

import json
import sys
from pathlib import Path

import numpy as np

from sb3_gpg_bench.suite import read_training_log
from sb3_gpg_bench.swap_rules import NEW, OLD, PREVIOUS, SIX_SEEDS, final, judge, normalise, run, summarise, tasks

HERE = Path(__file__).parent


def guide(seeds: list[int]) -> None:
    """
    Print the swap guide's table: each task's final evaluation, mean ± std over seeds, for PPO (seeds 100-101), the
    previous default (its six seeds) and the sound default, as a reStructuredText simple table.

    :param seeds: the sound default's seeds
    """
    header = ["task", "PPO", "GPG, previous default", "GPG, current default"]
    columns = [(PREVIOUS, "ppo", (100, 101)), (PREVIOUS, OLD, SIX_SEEDS), (HERE, NEW, tuple(seeds))]
    rows = []
    for task in tasks():
        cells = [task]
        for root, setting, its_seeds in columns:
            values = np.array([final(run(root, task, setting, seed), 0) for seed in its_seeds])
            cells.append(f"{values.mean():.1f} ± {values.std():.1f}")
        rows.append(cells)
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    rule = "  ".join("=" * width for width in widths)
    lines = [rule, "  ".join(cell.ljust(width) for cell, width in zip(header, widths, strict=True)).rstrip(), rule]
    lines += ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    print("\n".join([*lines, rule]))


def main() -> None:
    if sys.argv[1:2] == ["--guide"]:
        guide([int(seed) for seed in sys.argv[2:]])
        return
    seeds = [int(seed) for seed in sys.argv[1:]] or [100]
    random = json.loads((PREVIOUS / "random_scores.json").read_text())
    rows = [
        "| task | PPO (seeds 100-101) | previous default, same seeds | previous default, six seeds | sound default "
        "| difference | spread | verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    normalised: dict[str, list[list[float]]] = {NEW: [], OLD: []}
    verdicts: dict[str, list[str]] = {}
    for task in tasks():
        if not all((run(HERE, task, NEW, seed) / "meta.json").exists() for seed in seeds):
            continue
        new = np.array([final(run(HERE, task, NEW, seed), 0) for seed in seeds])
        old = np.array([final(run(PREVIOUS, task, OLD, seed), 0) for seed in seeds])
        six = np.array([final(run(PREVIOUS, task, OLD, seed), 0) for seed in SIX_SEEDS])
        ppo = np.array([final(run(PREVIOUS, task, "ppo", seed), 0) for seed in (100, 101)])
        spread = max(new.std(), old.std()) if len(seeds) > 1 else six.std()
        difference = new.mean() - old.mean()
        verdict = judge(task, difference, spread, verdicts)
        rows.append(
            f"| {task} | {ppo.mean():.1f} | {old.mean():.1f} | {six.mean():.1f} ± {six.std():.1f} | {new.mean():.1f} "
            f"| {difference:+.1f} | {spread:.1f} | {verdict} |"
        )
        normalise(normalised, random[task]["mean"], ppo, {NEW: new, OLD: old})
    summarise(rows, verdicts, normalised, seeds)
    print()
    print(
        "| task | held-out explained variance, mean over each quarter of training | lowest quarter | its median over "
        "each quarter | lowest quarter |"
    )
    print("|---|---|---|---|---|")
    for task in tasks():
        quarters: dict[str, list[list[float]]] = {"mean": [], "median": []}
        for seed in seeds:
            logged = read_training_log(run(HERE, task, NEW, seed)).get("train/baseline_explained_variance", [])
            if logged:
                parts = np.array_split(np.asarray(logged, dtype=float)[:, 1], 4)
                quarters["mean"].append([part.mean() for part in parts])
                quarters["median"].append([float(np.median(part)) for part in parts])
        if quarters["mean"]:
            cells = []
            for statistic in ("mean", "median"):
                values = np.mean(quarters[statistic], axis=0)
                cells += [" / ".join(f"{value:.2f}" for value in values), f"{values.min():.2f}"]
            print(f"| {task} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
