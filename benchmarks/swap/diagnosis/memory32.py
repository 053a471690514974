"""
The screens of a longer memory (README.md, "One change: a longer memory where the rollout is short", "One change: a
memory that may outweigh the rollout" and "The same memory on Ant-v5"): per run the median held-out explained variance
of the baselines over the run and per quarter (each rollout's, from the training log), the share of evaluation episodes
at the time limit per quarter, the final evaluation, the mean of the last five and the mean of the second half's
evaluations; then the screen's verdict against the reference's runs (by default the constructor's estimator rerun on
InvertedDoublePendulum-v5 in ``memory32/runs``). ``--rule late`` (on ``--seeds``) gives the late gain's verdict
instead (README.md in ``pooled_candidate``, *The lagged choice with 8 folds on two more Ant-v5 seeds*): the last five
ahead by more than the larger std over the seeds, and the finals not behind by more than theirs; ``--rule
not-behind`` the original screen 3's: the second half not behind by more than the larger std. Writes ``<folder>/screen.md``
(``screen_<task>.md`` for another task; ``--name`` names another file, for a second screen in one folder).

    python benchmarks/swap/diagnosis/memory32.py  # gpg_swap_memory32, in memory32/
    python benchmarks/swap/diagnosis/memory32.py --folder memory_uncapped --candidate gpg_swap_memory_uncapped
    python benchmarks/swap/diagnosis/memory32.py --task Ant-v5 --folder memory_uncapped \
        --candidate gpg_swap_memory_uncapped_auto --reference gpg_swap_lambda_auto --reference-folder memory_uncapped
    python benchmarks/swap/diagnosis/memory32.py --task Ant-v5 --folder pooled_candidate/folds_ant \
        --candidate gpg_swap_pooled32_previous_folds8_auto --reference gpg_swap_lambda_auto \
        --reference-folder pooled_candidate/folds_ant --seeds 100 101 104 105 --rule late --name screen_Ant-v5_late.md
"""

import argparse
from pathlib import Path

import gymnasium as gym
import numpy as np

from sb3_gpg_bench import swap_rules
from sb3_gpg_bench.suite import read_training_log
from sb3_gpg_bench.timing import evaluations

HERE = Path(__file__).parent
TASK = "InvertedDoublePendulum-v5"
SEEDS = (100, 101)


def measures(run: Path, limit: int) -> dict[str, float | list[float]]:
    """:return: the run's median held-out explained variance (over the run, per quarter), episodes at the limit per
    quarter and its evaluations' final, last five and second half"""
    explained = np.array(read_training_log(run)["train/baseline_explained_variance"])
    steps, returns = evaluations(run)
    lengths = np.load(run / "evaluations.npz")["ep_lengths"][: len(steps)]
    return {
        "explained": float(np.median(explained[:, 1])),
        "explained by quarter": [float(np.median(part[:, 1])) for part in np.array_split(explained, 4)],
        "at the limit by quarter": [float((part >= limit).mean()) for part in np.array_split(lengths, 4)],
        "final": float(returns[-1]),
        "last five": float(returns[-5:].mean()),
        "second half": float(returns[len(returns) // 2 :].mean()),
    }


def difference(values: dict[str, np.ndarray], candidate: str, reference: str) -> tuple[float, float]:
    """:return: the candidate's mean less the reference's, and the larger std over the seeds"""
    return values[candidate].mean() - values[reference].mean(), max(each.std() for each in values.values())


def screen_verdict(read: dict, over: dict, candidate: str, reference: str, seeds: list[int]) -> str:
    """:return: the screen's verdict: the median held-out EV above the reference's on every seed, and the second half
    ahead by more than the larger std"""
    ahead, spread = difference(over["second half"], candidate, reference)
    fits_better = all(read[(candidate, seed)]["explained"] > read[(reference, seed)]["explained"] for seed in seeds)
    verdict = "goes on" if fits_better and ahead > spread else "rejected as measured"
    return (
        f"Median held-out EV above the reference's on both seeds: {fits_better}; second half ahead by more than the "
        f"larger std ({spread:,.1f}): {ahead > spread}. Screen: {verdict}."
    )


def late_verdict(over: dict, candidate: str, reference: str) -> str:
    """:return: the late gain's verdict: the last five ahead by more than the larger std, the finals not behind by more"""
    ahead, spread = difference(over["last five"], candidate, reference)
    final, final_spread = difference(over["final"], candidate, reference)
    holds = ahead > spread and final >= -final_spread
    return (
        f"Last five ahead by more than the larger std ({spread:,.1f}): {ahead > spread}; finals not behind by more than "
        f"the larger std ({final_spread:,.1f}): {final >= -final_spread}. The late gain {'holds' if holds else 'does not'}."
    )


def not_behind_verdict(over: dict, candidate: str, reference: str) -> str:
    """:return: screen 3's verdict: the second half not behind by more than the larger std"""
    behind, spread = difference(over["second half"], candidate, reference)
    verdict = "passes" if behind >= -spread else "rejected as measured"
    return f"Second half not behind by more than the larger std ({spread:,.1f}): {behind >= -spread}. Screen: {verdict}."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default=TASK)
    parser.add_argument("--folder", default="memory32", help="the candidate's runs' folder, beside this script")
    parser.add_argument("--candidate", default="gpg_swap_memory32", help="the candidate's setting")
    parser.add_argument("--reference", default="gpg_swap_lambda_default", help="the reference's setting")
    parser.add_argument("--reference-folder", default="memory32", help="the reference's runs' folder")
    parser.add_argument("--seeds", nargs="+", type=int, default=list(SEEDS), help="the tuning seeds read")
    parser.add_argument("--rule", choices=["screen", "late", "not-behind"], default="screen", help="the verdict's rule")
    parser.add_argument("--name", help="the screen's file in the folder (by default screen.md or screen_<task>.md)")
    args = parser.parse_args()
    folder, candidate, reference, seeds = HERE / args.folder, args.candidate, args.reference, args.seeds
    where = {candidate: folder, reference: HERE / args.reference_folder}
    limit = gym.spec(args.task).max_episode_steps
    read = {(name, seed): measures(swap_rules.run(where[name], args.task, name, seed), limit)
            for name in (candidate, reference) for seed in seeds}  # fmt: skip
    lines = [
        "| setting | seed | median held-out EV | by quarter | at the limit, by quarter | final | last five | second half |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (name, seed), m in read.items():
        quarters = " / ".join(f"{x:.2f}" for x in m["explained by quarter"])  # type: ignore[union-attr]
        limits = " / ".join(f"{x:.2f}" for x in m["at the limit by quarter"])  # type: ignore[union-attr]
        lines.append(
            f"| {name} | {seed} | {m['explained']:.2f} | {quarters} | {limits} | {m['final']:,.1f} | "
            f"{m['last five']:,.1f} | {m['second half']:,.1f} |"
        )
    over = {
        measure: {name: np.array([read[(name, seed)][measure] for seed in seeds]) for name in (candidate, reference)}
        for measure in ("second half", "last five", "final")
    }
    lines.append("")
    for measure in over if args.rule == "late" else ["second half"]:
        values = over[measure]
        lines.append(
            f"{measure.capitalize()}, mean ± std over seeds: {candidate} {values[candidate].mean():,.1f} ± "
            f"{values[candidate].std():,.1f}, {reference} {values[reference].mean():,.1f} ± {values[reference].std():,.1f}."
        )
    if args.rule == "late":
        lines.append(late_verdict(over, candidate, reference))
    elif args.rule == "not-behind":
        lines.append(not_behind_verdict(over, candidate, reference))
    else:
        lines.append(screen_verdict(read, over, candidate, reference, seeds))
    name = args.name or ("screen.md" if args.task == TASK else f"screen_{args.task}.md")
    (folder / name).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
