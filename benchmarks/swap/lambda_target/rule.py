"""The rule of the lambda-returns target (README.md): over the 17 tasks on the seeds given, the linear baseline fitted
on its own lambda-returns where the task's PPO entry sets gae_lambda below 1 (gpg_swap_lambda, this folder's runs)
against the sound default. Where the entry leaves GAE's lambda at 1 (Ant-v5, Pusher-v5, Reacher-v5) the candidate is
the sound default itself, so its runs there are the sound default's own. Per task: the means, the larger std over the
seeds, the verdict; then both IQMs of PPO-normalised final evaluations with 95% bootstrap intervals (PPO's seeds
100-101 as the scale, as ../sound_default). Until every run is made, the tasks run on every seed so far and the
runs still missing, without the rule's verdict.

    python benchmarks/swap/lambda_target/rule.py 100 101 104 105 106 107
"""

import json
import sys
from pathlib import Path

import numpy as np

from sb3_gpg_bench import swap_rules

HERE = Path(__file__).parent
SOUND = swap_rules.SOUND

CANDIDATE = "gpg_swap_lambda"
AT_LAMBDA_ONE = ("Ant-v5", "Pusher-v5", "Reacher-v5")
NEW = swap_rules.NEW


def main() -> None:
    seeds = [int(seed) for seed in sys.argv[1:]] or list(swap_rules.SIX_SEEDS)
    sources = {task: (SOUND, NEW) if task in AT_LAMBDA_ONE else (HERE, CANDIDATE) for task in swap_rules.tasks()}
    missing = {
        task: [seed for seed in seeds if not swap_rules.run(root, task, setting, seed).exists()]
        for task, (root, setting) in sources.items()
    }
    random = json.loads((swap_rules.PREVIOUS / "random_scores.json").read_text())
    rows = [f"| task | PPO (seeds 100-101) | sound default | {CANDIDATE} | difference | spread | verdict |", "|---" * 7 + "|"]
    normalised: dict[str, list[list[float]]] = {NEW: [], CANDIDATE: []}
    verdicts: dict[str, list[str]] = {}
    for task, (root, setting) in sources.items():
        if missing[task]:
            continue
        sound = np.array([swap_rules.final(swap_rules.run(SOUND, task, NEW, seed), 0) for seed in seeds])
        candidate = np.array([swap_rules.final(swap_rules.run(root, task, setting, seed), 0) for seed in seeds])
        cells = swap_rules.compare(task, {NEW: sound, CANDIDATE: candidate}, random[task]["mean"], normalised, verdicts)
        rows.append(f"| {task} | {' | '.join(cells)} |")
    incomplete = {task: seeds for task, seeds in missing.items() if seeds}
    if not incomplete:
        swap_rules.summarise(rows, verdicts, normalised, seeds)
        return
    # the tasks run on every seed so far, without the rule's verdict, which waits for all of them
    print("\n".join(rows))
    print(f"\nno verdict yet: runs not made of {', '.join(f'{task} {seeds}' for task, seeds in incomplete.items())}")


if __name__ == "__main__":
    main()
