"""The rule of the trend with the long memory and 8 folds (README.md): over the 17 tasks on the seeds given, the
candidate against the current default rerun on the same code (both this folder's runs). Per task: PPO's mean (seeds
100-101, the scale), both settings' means ± std, the difference, the larger std and the verdict; then both IQMs of
PPO-normalised final evaluations with 95% bootstrap intervals. Until every run is made, the tasks run on every seed so
far, with a line for each task already behind beyond the spread (which ends the rule: it cannot pass).

    python benchmarks/swap/trend_rule/rule.py 100 101 104 105 106 107
"""

import json
import sys
from pathlib import Path

import numpy as np

from sb3_gpg_bench import swap_rules

HERE = Path(__file__).parent
REFERENCE, CANDIDATE = "gpg_swap_lambda_default", "gpg_swap_trend_long_folds8"


def settings(task: str) -> tuple[str, str]:
    """:return: the reference's and the candidate's setting on ``task`` (with the constructor's lambda where the entry
    names none)"""
    if task in swap_rules.AUTO_LAMBDA_TASKS:
        return swap_rules.AUTO_LAMBDA, f"{CANDIDATE}_auto"
    return REFERENCE, CANDIDATE


def main() -> None:
    seeds = [int(seed) for seed in sys.argv[1:]] or list(swap_rules.SIX_SEEDS)
    random = json.loads((swap_rules.PREVIOUS / "random_scores.json").read_text())
    rows = ["| task | PPO (seeds 100-101) | default, rerun | candidate | difference | spread | verdict |", "|---" * 7 + "|"]
    normalised: dict[str, list[list[float]]] = {REFERENCE: [], CANDIDATE: []}
    verdicts: dict[str, list[str]] = {}
    missing: dict[str, list[int]] = {}
    for task in swap_rules.tasks():
        names = settings(task)
        absent = [
            seed for seed in seeds for name in names if not (swap_rules.run(HERE, task, name, seed) / "meta.json").is_file()
        ]
        if absent:
            missing[task] = sorted(set(absent))
            continue
        scores = {
            key: np.array([swap_rules.final(swap_rules.run(HERE, task, name, seed), 0) for seed in seeds])
            for key, name in zip((REFERENCE, CANDIDATE), names, strict=True)
        }
        cells = swap_rules.compare(task, scores, random[task]["mean"], normalised, verdicts)
        rows.append(f"| {task} | {' | '.join(cells)} |")
    if not missing:
        iqm = swap_rules.summarise(rows, verdicts, normalised, seeds)
        adopted = iqm[CANDIDATE] >= iqm[REFERENCE] and not verdicts.get("behind")
        print(f"\nthe rule: {'adopted' if adopted else 'not adopted'} (IQM {iqm[CANDIDATE]:.3f} against {iqm[REFERENCE]:.3f})")
        return
    print("\n".join(rows))
    for task in verdicts.get("behind", []):
        print(f"\n{task} is behind beyond the spread: the rule cannot pass")
    print(f"\nno verdict yet: runs not made of {', '.join(f'{task} {seeds}' for task, seeds in missing.items())}")


if __name__ == "__main__":
    main()
