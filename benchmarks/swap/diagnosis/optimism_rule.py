"""The second step of the optimism's rule (README.md): over the 17 tasks on the seeds given, the linear baseline's
optimism on (gpg_swap_optimism) against the sound default. Only MountainCar-v0 and Acrobot-v1 cost the same every step,
so the candidate's runs there are this folder's optimism/runs and elsewhere the sound default's own, which train the
same with it on or off. Per task: the means, the larger std over the seeds, the verdict, the runs whose last evaluation
never reaches the goal; then both IQMs of PPO-normalised final evaluations with 95% bootstrap intervals (PPO's seeds
100-101 as the scale, as ../sound_default).

    python benchmarks/swap/diagnosis/optimism_rule.py 100 101 104 105 106 107
"""

import json
import sys
from pathlib import Path

import numpy as np

from sb3_gpg_bench import swap_rules

HERE = Path(__file__).parent
SOUND = swap_rules.SOUND

CANDIDATE = "gpg_swap_optimism"
NEVER = {"MountainCar-v0": -200.0, "Acrobot-v1": -500.0}  # every episode of the evaluation timed out
NEW = swap_rules.NEW


def main() -> None:
    seeds = [int(seed) for seed in sys.argv[1:]] or [100, 101, 104, 105, 106, 107]
    random = json.loads((swap_rules.PREVIOUS / "random_scores.json").read_text())
    rows = [
        f"| task | PPO (seeds 100-101) | sound default | {CANDIDATE} | difference | spread | verdict | never the goal |",
        "|---" * 8 + "|",
    ]
    normalised: dict[str, list[list[float]]] = {NEW: [], CANDIDATE: []}
    verdicts: dict[str, list[str]] = {}
    for task in swap_rules.tasks():
        root, setting = (HERE / "optimism", CANDIDATE) if task in NEVER else (SOUND, NEW)
        sound = np.array([swap_rules.final(swap_rules.run(SOUND, task, NEW, seed), 0) for seed in seeds])
        candidate = np.array([swap_rules.final(swap_rules.run(root, task, setting, seed), 0) for seed in seeds])
        cells = swap_rules.compare(task, {NEW: sound, CANDIDATE: candidate}, random[task]["mean"], normalised, verdicts)
        never = ""
        if task in NEVER:
            never = (
                f"{int((sound <= NEVER[task]).sum())} of {len(seeds)} against "
                f"{int((candidate <= NEVER[task]).sum())} of {len(seeds)}"
            )
        rows.append(f"| {task} | {' | '.join(cells)} | {never} |")
    swap_rules.summarise(rows, verdicts, normalised, seeds)


if __name__ == "__main__":
    main()
