"""The second step of the lambda candidates' rule (README.md): over the 17 tasks on the seeds given, GAE's lambda at a
candidate value where the script names none against the sound default. Only Ant-v5's and Pusher-v5's entries leave
gae_lambda unset, so the candidate's runs there are gpg_swap_lambda<value>'s (this folder) and elsewhere the sound
default's own, which train the same under either default. Per task: the means, the larger std over the seeds, the
verdict; then both IQMs of PPO-normalised final evaluations with 95% bootstrap intervals (PPO's seeds 100-101 as the
scale, as ../sound_default), over the tasks the sound default has run on every seed given.

    python benchmarks/swap/diagnosis/lambda_rule.py 100 101 104          # lambda 0.95
    python benchmarks/swap/diagnosis/lambda_rule.py 0.98 100 101 104     # another lambda's runs
    python benchmarks/swap/diagnosis/lambda_rule.py auto 100 101 104     # gae_lambda="auto" (gpg_swap_lambda_auto)
    python benchmarks/swap/diagnosis/lambda_rule.py auto rerun 100 101 104   # the sound default's runs from rerun/
                                                                             # where it has them (the same code)
"""

import json
import sys
from pathlib import Path

import numpy as np

from sb3_gpg_bench import swap_rules

HERE = Path(__file__).parent
SOUND = swap_rules.SOUND

UNSET = ("Ant-v5", "Pusher-v5")  # the entries that leave gae_lambda at its default
NEW = swap_rules.NEW


def main() -> None:
    arguments = sys.argv[1:]
    lam = arguments.pop(0) if arguments and not arguments[0].isdigit() else "0.95"
    rerun = bool(arguments) and arguments[0] == "rerun"
    arguments = arguments[rerun:]
    candidate_name = f"gpg_swap_lambda{lam}" if lam[0].isdigit() else f"gpg_swap_lambda_{lam}"
    seeds = [int(seed) for seed in arguments] or [100, 101]
    random = json.loads((swap_rules.PREVIOUS / "random_scores.json").read_text())
    rows = [
        f"| task | PPO (seeds 100-101) | sound default | {candidate_name} | difference | spread | verdict |",
        "|---" * 7 + "|",
    ]
    normalised: dict[str, list[list[float]]] = {NEW: [], candidate_name: []}
    verdicts: dict[str, list[str]] = {}
    for task in swap_rules.tasks():
        candidate_root, candidate_setting = (HERE, candidate_name) if task in UNSET else (SOUND, NEW)
        sound_root = HERE / "rerun" if rerun and swap_rules.run(HERE / "rerun", task, NEW, seeds[0]).exists() else SOUND
        folders = [swap_rules.run(sound_root, task, NEW, seed) for seed in seeds]
        folders += [swap_rules.run(candidate_root, task, candidate_setting, seed) for seed in seeds]
        missing = [folder.name for folder in folders if not (folder / "meta.json").exists()]
        if task in UNSET and any(candidate_name in name for name in missing):
            sys.exit(f"{task}: the candidate's runs {missing} are missing; the rule cannot be read without them")
        if missing:
            continue
        sound = np.array([swap_rules.final(folder, 0) for folder in folders[: len(seeds)]])
        candidate = np.array([swap_rules.final(folder, 0) for folder in folders[len(seeds) :]])
        cells = swap_rules.compare(task, {NEW: sound, candidate_name: candidate}, random[task]["mean"], normalised, verdicts)
        rows.append(f"| {task} | {' | '.join(cells)} |")
    swap_rules.summarise(rows, verdicts, normalised, seeds)


if __name__ == "__main__":
    main()
