"""
The screen of MountainCar-v0's slower path once the goal is found (README.md): per run the first evaluation above the
floor, the final evaluation, the mean of the last five, and the medians per quarter of the training episodes' length,
the update's approximate KL and the baselines' held-out explained variance; then each change's verdict against the
reference under the README's rule. Prints markdown.

    python benchmarks/swap/diagnosis/path/path.py > benchmarks/swap/diagnosis/path/screen.md
"""

import argparse
from pathlib import Path

import numpy as np

from sb3_gpg_bench import swap_rules
from sb3_gpg_bench.dynamics import quarter_medians, series

HERE = Path(__file__).parent
TASK = "MountainCar-v0"
REFERENCE = "gpg_swap_lambda_default"
CHANGES = ("gpg_swap_folds8", "gpg_swap_memory_uncapped", "gpg_swap_pooled", "gpg_swap_no_time", "gpg_swap_all_sizes")
SEEDS = (100, 101)
# the changes that went on to the other tuning seeds, and the reference's runs there: the optimism's committed runs,
# whose code trains as this screen's (its seeds 100 and 101 reproduce them bit for bit)
GONE_ON = ("gpg_swap_no_time", "gpg_swap_all_sizes")
MORE_SEEDS = (104, 105, 106, 107)
SWAP = HERE.parents[1]
REFERENCE_ELSEWHERE = {
    104: (SWAP / "diagnosis" / "optimism_fixed", "gpg_swap_optimism"),
    **{seed: (SWAP / "optimism_default", "gpg_swap_optimism") for seed in (105, 106, 107)},
}
# an evaluation above it reached the goal (every episode that does not ends at the time limit, -200)
FLOOR = -200.0


def quarters(values: list[float], digits: int) -> str:
    return " / ".join(f"{value:.{digits}f}" for value in values)


def reading(runs: dict[tuple[str, int], Path], settings: tuple[str, ...], seeds: tuple[int, ...]) -> list[str]:
    """
    :param runs: each (setting, seed)'s run folder
    :return: the table of the runs and each change's verdict against the reference under the README's rule
    """
    rows = [
        "| setting | seed | first goal | final | last five | episode length | approximate KL | held-out EV |",
        "|---" * 8 + "|",
    ]
    last_five: dict[str, list[float]] = {}
    reached: dict[str, bool] = {}
    for setting in (REFERENCE, *settings):
        for seed in seeds:
            run = runs[setting, seed]
            if not (run / "meta.json").is_file():
                rows.append(f"| `{setting}` | {seed} | (not run) | | | | | |")
                continue
            first, final, five = swap_rules.goal_scores(run, FLOOR)
            logged = series(run)
            last_five.setdefault(setting, []).append(five)
            reached[setting] = reached.get(setting, True) and first != "never"
            rows.append(
                f"| `{setting}` | {seed} | {first} | {final:.1f} | {five:.1f} | "
                f"{quarters(quarter_medians([logged['rollout/ep_len_mean']]), 0)} | "
                f"{quarters(quarter_medians([logged['train/approx_kl']]), 5)} | "
                f"{quarters(quarter_medians([logged['explained']]), 3)} |"
            )
    lines = [*rows, ""]
    reference = np.array(last_five.get(REFERENCE, []))
    for setting in settings:
        change = np.array(last_five.get(setting, []))
        if len(change) < len(seeds) or len(reference) < len(seeds):
            lines.append(f"- `{setting}`: not every run made")
            continue
        ahead, spread = float(change.mean() - reference.mean()), float(max(change.std(), reference.std()))
        explains = ahead > spread and reached[setting]
        lines.append(
            f"- `{setting}`: last five {change.mean():.1f} ± {change.std():.1f} against {reference.mean():.1f} ± "
            f"{reference.std():.1f}, ahead by {ahead:.1f} (larger spread {spread:.1f}); "
            f"{'explains the slower path' if explains else 'rejected as measured'}"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folder", type=Path, default=HERE, help="the folder whose runs/ hold the screen's runs")
    args = parser.parse_args()
    here = {(setting, seed): swap_rules.run(args.folder, TASK, setting, seed)
            for setting in (REFERENCE, *CHANGES) for seed in (*SEEDS, *MORE_SEEDS)}  # fmt: skip
    six = SEEDS + MORE_SEEDS
    elsewhere = {}
    for seed in MORE_SEEDS:
        root, setting = REFERENCE_ELSEWHERE[seed]
        elsewhere[REFERENCE, seed] = swap_rules.run(root, TASK, setting, seed)
    lines = [f"{TASK}, tuning seeds {', '.join(map(str, SEEDS))}; medians per quarter of training.", ""]
    lines += reading(here, CHANGES, SEEDS)
    lines += ["", f"The changes that went on, over the six tuning seeds {', '.join(map(str, six))} (the reference's seeds "
              "104-107: the optimism's committed runs).", ""]  # fmt: skip
    lines += reading({**here, **elsewhere}, GONE_ON, six)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
