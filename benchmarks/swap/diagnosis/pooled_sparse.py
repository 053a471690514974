"""
The pooled candidate's first screen (pooled_candidate/README.md, *The screens*): on MountainCar-v0 and Acrobot-v1,
tuning seeds 100 and 101, each run's first goal (the first evaluation above the time limit's score), final evaluation
and mean of the last five, against the default's runs named there; passes if every run reaches the goal and none
later than twice its reference on its seed. Writes ``pooled_candidate/screen_sparse.md`` (for another candidate's
setting, ``screen_sparse_<setting>.md``). With ``--reference``, the reference is that setting's runs in the same
folder (a screen whose references were rerun on its CPU beside it), on ``--tasks`` and ``--seeds``; ``--name`` names
another file, for a second screen of one candidate in one folder.

    python benchmarks/swap/diagnosis/pooled_sparse.py [--candidate gpg_swap_pooled32_previous_folds8] [--folder DIR]
        [--reference gpg_swap_lambda_default --tasks Acrobot-v1 --seeds 100 101 104 105] [--name FILE]
"""

import argparse
from pathlib import Path

from sb3_gpg_bench import swap_rules

HERE = Path(__file__).parent
FOLDER, CANDIDATE = HERE / "pooled_candidate", "gpg_swap_pooled32"
REFERENCES = {
    ("Acrobot-v1", 100): (HERE.parent / "goal_lapse" / "reference_rerun", "gpg_swap_lambda_default"),
    ("Acrobot-v1", 101): (HERE.parent / "goal_lapse" / "reference_rerun", "gpg_swap_lambda_default"),
    ("MountainCar-v0", 100): (HERE / "optimism_fixed", "gpg_swap_optimism"),
    ("MountainCar-v0", 101): (HERE.parent / "optimism_default", "gpg_swap_optimism"),
}


def first_goal(scores: tuple[str, float, float]) -> int | None:
    """:return: the step of the first goal in ``swap_rules.goal_scores``' scores; None where the run never reaches it"""
    return None if scores[0] == "never" else int(scores[0].replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--candidate", default=CANDIDATE, help="the candidate's setting")
    parser.add_argument("--folder", type=Path, default=FOLDER, help="the folder of its runs (and of the screen's table)")
    parser.add_argument("--reference", help="the reference's setting, run in the same folder (default: those above)")
    parser.add_argument("--tasks", nargs="+", choices=list(swap_rules.NEVER_THERE), default=list(swap_rules.NEVER_THERE))
    parser.add_argument("--seeds", nargs="+", type=int, default=[100, 101], help="with --reference: the seeds")
    parser.add_argument("--name", help="the screen's file in the folder (by default screen_sparse[_<setting>].md)")
    args = parser.parse_args()
    candidate_setting, folder = args.candidate, args.folder
    references = (
        {(task, seed): (folder, args.reference) for task in args.tasks for seed in args.seeds}
        if args.reference
        else REFERENCES
    )
    lines = [
        "| task | seed | reference: first goal, final, last five | candidate: first goal, final, last five | verdict |",
        "|---|---|---|---|---|",
    ]
    passed = True
    for (task, seed), (root, setting) in references.items():
        floor = swap_rules.NEVER_THERE[task]
        reference = swap_rules.goal_scores(swap_rules.run(root, task, setting, seed), floor)
        candidate = swap_rules.goal_scores(swap_rules.run(folder, task, candidate_setting, seed), floor)
        goal, reference_goal = first_goal(candidate), first_goal(reference)
        in_time = goal is not None and (reference_goal is None or goal <= 2 * reference_goal)
        passed &= in_time
        verdict = "passes" if in_time else ("never reaches the goal" if goal is None else "first goal over twice later")
        cells = ["{}, {:.1f}, {:.1f}".format(*scores) for scores in (reference, candidate)]
        lines.append(f"| {task} | {seed} | {cells[0]} | {cells[1]} | {verdict} |")
    against = f" against {args.reference}" if args.reference else ""
    lines += ["", f"Screen 1{against}: {'passes' if passed else 'fails'}."]
    name = args.name or ("screen_sparse.md" if candidate_setting == CANDIDATE else f"screen_sparse_{candidate_setting}.md")
    (folder / name).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
