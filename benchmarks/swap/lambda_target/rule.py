"""The rule of the lambda-returns target (README.md): over the 17 tasks on the seeds given, the linear baseline fitted
on its own lambda-returns where the task's PPO entry sets gae_lambda below 1 (gpg_swap_lambda, this folder's runs)
against the sound default. Where the entry leaves GAE's lambda at 1 (Ant-v5, Pusher-v5, Reacher-v5) the candidate is
the sound default itself, so its runs there are the sound default's own. Per task: the means, the larger std over the
seeds, the verdict; then both IQMs of PPO-normalised final evaluations with 95% bootstrap intervals (PPO's seeds
100-101 as the scale, as ../sound_default). Until every run is made, the tasks run on every seed so far and the
runs still missing, without the rule's verdict.

    python benchmarks/swap/lambda_target/rule.py 100 101 104 105 106 107
"""

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
SOUND = HERE.parent / "sound_default"
_spec = importlib.util.spec_from_file_location("sound_rule", SOUND / "rule.py")
assert _spec is not None and _spec.loader is not None
sound_rule = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sound_rule)

CANDIDATE = "gpg_swap_lambda"
AT_LAMBDA_ONE = ("Ant-v5", "Pusher-v5", "Reacher-v5")
NEW = sound_rule.NEW


def main() -> None:
    seeds = [int(seed) for seed in sys.argv[1:]] or list(sound_rule.SIX_SEEDS)
    sources = {task: (SOUND, NEW) if task in AT_LAMBDA_ONE else (HERE, CANDIDATE) for task in sound_rule.tasks()}
    missing = {
        task: [seed for seed in seeds if not sound_rule.run(root, task, setting, seed).exists()]
        for task, (root, setting) in sources.items()
    }
    random = json.loads((sound_rule.PREVIOUS / "random_scores.json").read_text())
    rows = [f"| task | PPO (seeds 100-101) | sound default | {CANDIDATE} | difference | spread | verdict |", "|---" * 7 + "|"]
    normalised: dict[str, list[list[float]]] = {NEW: [], CANDIDATE: []}
    verdicts: dict[str, list[str]] = {}
    for task, (root, setting) in sources.items():
        if missing[task]:
            continue
        sound = np.array([sound_rule.final(sound_rule.run(SOUND, task, NEW, seed), 0) for seed in seeds])
        candidate = np.array([sound_rule.final(sound_rule.run(root, task, setting, seed), 0) for seed in seeds])
        cells = sound_rule.compare(task, {NEW: sound, CANDIDATE: candidate}, random[task]["mean"], normalised, verdicts)
        rows.append(f"| {task} | {' | '.join(cells)} |")
    incomplete = {task: seeds for task, seeds in missing.items() if seeds}
    if not incomplete:
        sound_rule.summarise(rows, verdicts, normalised, seeds)
        return
    # the tasks run on every seed so far, without the rule's verdict, which waits for all of them
    print("\n".join(rows))
    print(f"\nno verdict yet: runs not made of {', '.join(f'{task} {seeds}' for task, seeds in incomplete.items())}")


if __name__ == "__main__":
    main()
