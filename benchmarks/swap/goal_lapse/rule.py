"""
The rule of README.md: per task and seed the first evaluation above the goal's floor, the final evaluation and the mean
of the last five, for the reference (the current default's committed runs) and the candidate (the goal that lapses,
this folder's runs; then parts 1 and 2 again against the references rerun on this machine, ``reference_rerun/``),
with the step from which their updates differ (or "bit for bit"); per task the verdict (behind where the candidate's
mean final is below the reference's by more than the larger std over the seeds, or a candidate run never reaches the
goal). For the swap suite (part 1), the 17-task IQM of PPO-normalised finals too, the 14 tasks where the change cannot
act read from the runs the optimism's rule read (``../optimism_default/rule.py``) for both. With ``--fresh``, the
fresh seeds of the lapse under "auto" only (part 2's setting) beside PPO's. Prints markdown.

    python benchmarks/swap/goal_lapse/rule.py
    python benchmarks/swap/goal_lapse/rule.py --fresh
"""

import argparse
import gzip
import json
import runpy
from pathlib import Path

import numpy as np

from sb3_gpg_bench import swap_rules

HERE = Path(__file__).parent
SWAP = HERE.parent
# an evaluation above the floor reached the goal (an episode that ends before the time limit; on
# MountainCarContinuous-v0, one that earns the goal's reward)
FLOORS = {"Acrobot-v1": -500.0, "MountainCar-v0": -200.0, "MountainCarContinuous-v0": 0.0}
CANDIDATE = "gpg_swap_lambda_default"
# (title, tasks, seeds, reference folders, reference setting, candidate setting)
PARTS = (
    (
        "1. The swap suite (the entries' lambda)",
        tuple(FLOORS),
        swap_rules.SIX_SEEDS,
        (SWAP / "diagnosis" / "optimism_fixed", SWAP / "optimism_default"),
        swap_rules.OPTIMISM,
        CANDIDATE,
    ),
    (
        "2. Lambda left unset (`gae_lambda='auto'`)",
        ("Acrobot-v1", "MountainCar-v0"),
        (100, 101, 104, 105),
        (SWAP / "optimism_auto",),
        "gpg_swap_lambda_auto_optimism",
        "gpg_swap_lambda_auto_optimism",
    ),
    # the references rerun on this machine's CPU, on the code before the lapse
    (
        "2, again: against the references rerun on this machine",
        ("Acrobot-v1", "MountainCar-v0"),
        (100, 101, 104, 105),
        (HERE / "reference_rerun",),
        "gpg_swap_lambda_auto_optimism",
        "gpg_swap_lambda_auto_optimism",
    ),
    (
        "1, again: Acrobot-v1 against the references rerun on this machine",
        ("Acrobot-v1",),
        swap_rules.SIX_SEEDS,
        (HERE / "reference_rerun",),
        CANDIDATE,
        CANDIDATE,
    ),
)
FRESH = (110, 111)


def parted(reference: Path, candidate: Path) -> str:
    """:return: "bit for bit" where the two runs' updates (their KL, logged every 2 rollouts) are alike, else the step
    from which they differ"""
    logs = [
        json.loads(gzip.decompress((run / "training_log.json.gz").read_bytes()))["train/approx_kl"]
        for run in (reference, candidate)
    ]
    differ = [step for (step, one), (_, other) in zip(*logs, strict=False) if one != other]
    return f"differs from {int(differ[0]):,}" if differ else "bit for bit"


def part(title: str, tasks: tuple[str, ...], seeds: tuple[int, ...], roots: tuple[Path, ...], reference: str, candidate: str):
    """:return: the part's lines, and each task's final evaluations (reference's, candidate's) where every run is made"""
    lines = [f"### {title}", "", "| task | seed | reference: first goal, final, last five | candidate | alike |"]
    lines.append("|---|---|---|---|---|")
    verdicts, finals = [], {}
    for task in tasks:
        floor = FLOORS[task]
        values: dict[str, list[float]] = {"reference": [], "candidate": []}
        reached = True
        for seed in seeds:
            runs = {"reference": swap_rules.found(roots, task, reference, seed)}
            runs["candidate"] = swap_rules.found((HERE,), task, candidate, seed)
            cells = []
            for name, run in runs.items():
                if run is None:
                    cells.append("(not run)")
                    continue
                first, final, last_five = swap_rules.goal_scores(run, floor)
                values[name].append(final)
                reached = reached and (name == "reference" or first != "never")
                cells.append(f"{first}, {final:.1f}, {last_five:.1f}")
            alike = "" if None in runs.values() else parted(runs["reference"], runs["candidate"])
            lines.append(f"| {task} | {seed} | {' | '.join(cells)} | {alike} |")
        if min(len(v) for v in values.values()) < len(seeds):
            verdicts.append(f"- {task}: not every run made")
            continue
        ref, cand = np.array(values["reference"]), np.array(values["candidate"])
        behind, spread = float(ref.mean() - cand.mean()), float(max(ref.std(), cand.std()))
        verdict = "behind" if behind > spread or not reached else ("ahead" if -behind > spread else "level")
        verdicts.append(
            f"- {task}: candidate {cand.mean():.1f} ± {cand.std():.1f} against {ref.mean():.1f} ± {ref.std():.1f}, "
            f"behind by {behind:.3f} (larger spread {spread:.3f}); every candidate run reaches the goal: "
            f"{'yes' if reached else 'no'}; {verdict}"
        )
        finals[task] = (ref, cand)
    return [*lines, "", *verdicts], finals


def iqm(finals: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
    """Print the 17-task IQMs, the 14 unchanged tasks' runs shared by both settings."""
    earlier = runpy.run_path(str(SWAP / "optimism_default" / "rule.py"))
    random = json.loads((swap_rules.PREVIOUS / "random_scores.json").read_text())
    normalised: dict[str, list[list[float]]] = {"reference": [], "candidate": []}
    rows, verdicts = ["| task | source |", "|---|---|"], {}
    for task in swap_rules.tasks():
        if task in finals:
            ref, cand = finals[task]
            source = "this rule's runs"
        else:
            root, setting = earlier["NEWEST"].get(task, earlier["LAMBDA_TARGET"])
            runs = [swap_rules.run(root, task, setting, seed) for seed in swap_rules.SIX_SEEDS]
            ref = cand = np.array([swap_rules.final(run, 0) for run in runs])
            source = f"`{root.relative_to(SWAP)}` {setting}, both"
        ppo = np.array([swap_rules.final(swap_rules.run(swap_rules.PREVIOUS, task, "ppo", seed), 0) for seed in (100, 101)])
        swap_rules.normalise(normalised, random[task]["mean"], ppo, {"reference": ref, "candidate": cand})
        rows.append(f"| {task} | {source} |")
    swap_rules.summarise(rows, verdicts, normalised, list(swap_rules.SIX_SEEDS))


def fresh() -> list[str]:
    """:return: the fresh seeds of the lapse under "auto" only (part 2's setting), beside PPO's"""
    lines = ["| task | setting | seed | candidate: first goal, final, last five | PPO |", "|---|---|---|---|---|"]
    for _, tasks, _, _, _, candidate in PARTS[1:2]:
        for task in tasks:
            for seed in FRESH:
                runs = [swap_rules.run(HERE / "fresh_seeds", task, setting, seed) for setting in (candidate, "ppo")]
                cells = [swap_rules.goal_cell(run, FLOORS[task]) for run in runs]
                lines.append(f"| {task} | {candidate} | {seed} | {' | '.join(cells)} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fresh", action="store_true", help="the candidate's fresh seeds beside PPO's")
    args = parser.parse_args()
    if args.fresh:
        print("\n".join(fresh()))
        return
    for number, spec in enumerate(PARTS):
        lines, finals = part(*spec)
        print("\n".join(lines))
        print()
        if number == 0 and len(finals) == len(spec[1]):
            iqm(finals)
            print()


if __name__ == "__main__":
    main()
