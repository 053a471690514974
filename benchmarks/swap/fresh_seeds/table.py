"""The swap on the fresh seeds 108 and 109 (README.md): per task, PPO (RL Zoo's entry) and the adopted default
(gpg_swap_lambda_default) on the same seeds, budgets and evaluation, counted whatever they score. Per task: each
algorithm's mean ± std over the seeds of the final evaluation (the mean of the last five beside it), GPG's mean as a
fraction of PPO's over random play's, the verdict (behind or ahead by more than the larger std, else level) and the
issue's targets: at least 0.8 of PPO where PPO learns, and no run that never reaches the goal where every PPO run
does (the sparse -1-per-step tasks: a final evaluation at the time limit's score). Once every run is made, GPG's IQM
of PPO-normalised final evaluations with its 95% bootstrap interval; until then the tasks whose runs are all made,
and the runs still missing.

    python benchmarks/swap/fresh_seeds/table.py
"""

import json
from pathlib import Path

import numpy as np

from sb3_gpg_bench import swap_rules

HERE = Path(__file__).parent
SEEDS = (108, 109)
GPG = "gpg_swap_lambda_default"


def scores(task: str, setting: str, metric: int) -> np.ndarray:
    return np.array([swap_rules.final(swap_rules.run(HERE, task, setting, seed), metric) for seed in SEEDS])


def main() -> None:
    random = json.loads((swap_rules.PREVIOUS / "random_scores.json").read_text())
    missing = {
        task: [f"{setting} {seed}" for setting in ("ppo", GPG) for seed in SEEDS
               if not swap_rules.run(HERE, task, setting, seed).exists()]
        for task in swap_rules.tasks()
    }  # fmt: skip
    header = "| task | PPO | GPG | last five: PPO, GPG | of PPO | verdict | targets |"
    rows = [header, "|---" * 7 + "|"]
    normalised: dict[str, list[list[float]]] = {GPG: []}
    verdicts: dict[str, list[str]] = {}
    for task, absent in missing.items():
        if absent:
            continue
        ppo, gpg = scores(task, "ppo", 0), scores(task, GPG, 0)
        last_ppo, last_gpg = scores(task, "ppo", 1), scores(task, GPG, 1)
        floor = random[task]["mean"]
        verdict = swap_rules.judge(task, gpg.mean() - ppo.mean(), max(ppo.std(), gpg.std()), verdicts)
        swap_rules.normalise(normalised, floor, ppo, {GPG: gpg})
        fraction = swap_rules.of_ppo(gpg.mean(), ppo.mean(), floor)
        cells = [
            f"{ppo.mean():,.1f} ± {ppo.std():,.1f}",
            f"{gpg.mean():,.1f} ± {gpg.std():,.1f}",
            f"{last_ppo.mean():,.1f}, {last_gpg.mean():,.1f}",
            f"{fraction:.2f}",
            verdict,
            swap_rules.targets_missed(task, fraction, ppo, gpg),
        ]
        rows.append(f"| {task} | {' | '.join(cells)} |")
    print("\n".join(rows))
    incomplete = {task: absent for task, absent in missing.items() if absent}
    print()
    for verdict, names in sorted(verdicts.items()):
        print(f"{verdict}: {len(names)} ({', '.join(names)})")
    if incomplete:
        # the runs made of the tasks not yet complete, one by one (no table where none is made)
        made = [
            (task, setting, seed, folder)
            for task in incomplete
            for setting in ("ppo", GPG)
            for seed in SEEDS
            if (folder := swap_rules.run(HERE, task, setting, seed)).exists()
        ]
        if made:
            print("\n| task | setting | seed | final | last five |\n|---|---|---|---|---|")
        for task, setting, seed, folder in made:
            values = [swap_rules.final(folder, metric) for metric in (0, 1)]
            print(f"| {task} | {setting} | {seed} | {values[0]:,.1f} | {values[1]:,.1f} |")
        absent = "; ".join(f"{task}: {', '.join(runs)}" for task, runs in incomplete.items())
        print(f"\nno aggregate yet: runs not made of {absent}")
        return
    swap_rules.summarise([], {}, normalised, list(SEEDS))


if __name__ == "__main__":
    main()
