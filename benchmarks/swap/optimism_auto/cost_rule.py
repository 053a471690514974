"""
The rule of README.md's "A rollout of one cost takes PPO's lambda": per task and seed the first evaluation above the
floor, the final evaluation and the mean of the last five, for the reference (``gpg_swap_lambda_auto_optimism``) and
the candidate (``gpg_swap_lambda_auto_cost``), then the verdict (adopted if every candidate run reaches the goal and on
neither task is the candidate's final behind the reference's by more than the larger std over the seeds); with
``--fresh``, the candidate's fresh seeds beside PPO's. Prints markdown.

    python benchmarks/swap/optimism_auto/cost_rule.py
    python benchmarks/swap/optimism_auto/cost_rule.py --fresh
"""

import argparse
from pathlib import Path

import numpy as np

from sb3_gpg_bench import swap_rules

HERE = Path(__file__).parent
# an evaluation above the floor reached the goal (an episode that does not ends at the time limit)
FLOORS = {"MountainCar-v0": -200.0, "Acrobot-v1": -500.0}
REFERENCE, CANDIDATE = "gpg_swap_lambda_auto_optimism", "gpg_swap_lambda_auto_cost"
SEEDS = (100, 101, 104, 105)
FRESH = (110, 111)


def rule() -> list[str]:
    lines = ["| task | seed | reference: first goal, final, last five | candidate |", "|---|---|---|---|"]
    verdicts = []
    for task, floor in FLOORS.items():
        finals: dict[str, list[float]] = {REFERENCE: [], CANDIDATE: []}
        reached = True
        for seed in SEEDS:
            cells = []
            for setting in (REFERENCE, CANDIDATE):
                run = swap_rules.run(HERE, task, setting, seed)
                if not (run / "meta.json").is_file():
                    cells.append("(not run)")
                    continue
                first, final, last_five = swap_rules.goal_scores(run, floor)
                finals[setting].append(final)
                reached = reached and (setting == REFERENCE or first != "never")
                cells.append(f"{first}, {final:.1f}, {last_five:.1f}")
            lines.append(f"| {task} | {seed} | {' | '.join(cells)} |")
        if min(len(values) for values in finals.values()) < len(SEEDS):
            verdicts.append(f"- {task}: not every run made")
            continue
        reference, candidate = np.array(finals[REFERENCE]), np.array(finals[CANDIDATE])
        behind, spread = float(reference.mean() - candidate.mean()), float(max(reference.std(), candidate.std()))
        verdicts.append(
            f"- {task}: candidate {candidate.mean():.1f} ± {candidate.std():.1f} against {reference.mean():.1f} ± "
            f"{reference.std():.1f}, behind by {behind:.1f} (larger spread {spread:.1f}); every candidate run reaches "
            f"the goal: {'yes' if reached else 'no'}; {'behind' if behind > spread or not reached else 'passes'}"
        )
    return [*lines, "", *verdicts]


def fresh() -> list[str]:
    lines = ["| task | seed | candidate: first goal, final, last five | PPO |", "|---|---|---|---|"]
    for task, floor in FLOORS.items():
        for seed in FRESH:
            runs = [swap_rules.run(HERE / "fresh_seeds", task, setting, seed) for setting in (CANDIDATE, "ppo")]
            cells = [swap_rules.goal_cell(run, floor) for run in runs]
            lines.append(f"| {task} | {seed} | {' | '.join(cells)} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fresh", action="store_true", help="the candidate's fresh seeds beside PPO's")
    args = parser.parse_args()
    print("\n".join(fresh() if args.fresh else rule()))


if __name__ == "__main__":
    main()
