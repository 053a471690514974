"""
GPG's linear baseline on PPO's rollouts, in variants, beside PPO's critic (README.md, "What PPO's critic explains of a
walking Ant, and GPG's baseline on the same rollouts"): per run of ``ppo_baseline_variants`` in ``baseline_variants/``,
the median of each variant's held-out explained variance (``variants/<name>``) and of PPO's critic's
(``diagnosis/returns_explained_variance``) over each window of steps, then the rule's reading per seed: the gap between
the critic and the default variant, and the share of it each variant closes. Says whether PPO's seed-101 evaluations
equal its diagnosis run's (``runs/<task>__ppo_diagnosis__seed101``), which they do where the install is the same: the
callback changes nothing in training (``tests/test_baseline_variants.py``). Writes ``baseline_variants/<task>.md``.

    python benchmarks/swap/diagnosis/variants_report.py --task Ant-v5
    python benchmarks/swap/diagnosis/variants_report.py --task InvertedDoublePendulum-v5 --read 0 125000
"""

import argparse
import itertools
from pathlib import Path

import numpy as np

from sb3_gpg_bench.baseline_variants import VARIANTS
from sb3_gpg_bench.suite import read_training_log
from sb3_gpg_bench.timing import evaluations

HERE = Path(__file__).parent
SETTING = "ppo_baseline_variants"
SEEDS = (100, 101)
CRITIC = "diagnosis/returns_explained_variance"
# the callback's variants and the default features' fit in sample
NAMES = (*VARIANTS, "in_sample")
QUARTERS = (0, 250_000, 500_000, 750_000, 1_000_000)


def medians(series: list[list[float]], edges: tuple[int, ...]) -> list[float]:
    """:return: the median of the values logged in each window ``(edges[i], edges[i + 1]]`` of steps"""
    values = np.array(series)
    return [
        float(np.nanmedian(values[(values[:, 0] > low) & (values[:, 0] <= high), 1]))
        for low, high in itertools.pairwise(edges)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="Ant-v5")
    parser.add_argument("--read", type=int, nargs=2, default=(250_000, 1_000_000), help="the window the rule reads")
    args = parser.parse_args()
    names = ("PPO's critic", *NAMES)
    lines = [
        f"# GPG's linear baseline on PPO's {args.task} rollouts, beside PPO's critic",
        "",
        "Held-out explained variance of the rollout's returns (completed as GPG's are), median per quarter of training;",
        "`in_sample`: the default features' fit scored on the rollout it was fitted on.",
        "",
        "| seed | value | " + " | ".join(f"Q{k}" for k in range(1, 5)) + f" | {args.read[0]:,}-{args.read[1]:,} |",
        "|---|---|" + "---|" * 5,
    ]
    read: dict[int, dict[str, float]] = {}
    for seed in SEEDS:
        run = HERE / "baseline_variants" / "runs" / f"{args.task}__{SETTING}__seed{seed}"
        logged = read_training_log(run)
        read[seed] = {}
        for name in names:
            series = logged[CRITIC if name == names[0] else f"variants/{name}"]
            by_quarter = medians(series, QUARTERS)
            read[seed][name] = medians(series, tuple(args.read))[0]
            cells = " | ".join(f"{value:.2f}" for value in (*by_quarter, read[seed][name]))
            lines.append(f"| {seed} | {name} | {cells} |")
    lines += ["", f"The rule's reading over steps {args.read[0]:,}-{args.read[1]:,} (README.md):", ""]
    for seed in SEEDS:
        gap = read[seed][names[0]] - read[seed]["default"]
        others = [name for name in VARIANTS if name != "default"] if gap != 0 else []
        closed = ", ".join(f"{name} {(read[seed][name] - read[seed]['default']) / gap:.2f}" for name in others)
        lines.append(f"- seed {seed}: the critic less the default {gap:.2f}; share of it closed: {closed}")
    reference = HERE / "runs" / f"{args.task}__ppo_diagnosis__seed101"
    own = HERE / "baseline_variants" / "runs" / f"{args.task}__{SETTING}__seed101"
    theirs, ours = evaluations(reference)[1], evaluations(own)[1]
    first = ", ".join(f"{value:.1f}" for value in ours[:3])
    lines += [
        "",
        f"PPO's seed-101 evaluations equal `../runs/{reference.name}`'s: {'yes' if np.array_equal(theirs, ours) else 'no'}"
        f" (first three {first}, against {', '.join(f'{value:.1f}' for value in theirs[:3])}).",
        "",
    ]
    (HERE / "baseline_variants" / f"{args.task}.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
