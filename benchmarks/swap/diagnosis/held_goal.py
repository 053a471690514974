"""
Whether MountainCarContinuous-v0's runs hold the goal once found (README.md, *What ends the optimism rule*): per
setting over the six tuning seeds, the final evaluation's mean ± std, the mean of the last five, the runs that end
below 0, and the evaluations below 0 after the first one above 50 (of all such evaluations).

    python benchmarks/swap/diagnosis/held_goal.py
"""

from pathlib import Path

import numpy as np

from sb3_gpg_bench import swap_rules
from sb3_gpg_bench.suite_report import evaluations

TASK = "MountainCarContinuous-v0"
SWAP = Path(__file__).resolve().parents[1]
SETTINGS = (
    (SWAP / "trend_rule", "gpg_swap_lambda_default"),
    (SWAP / "trend_rule", "gpg_swap_trend_long_folds8"),
    (SWAP / "optimism_rule", "gpg_swap_trend_long_folds8_optimism"),
    (SWAP / "diagnosis" / "trend_parts", "gpg_swap_memory_uncapped"),
    (SWAP / "diagnosis" / "trend_parts", "gpg_swap_trend_long"),
    (SWAP / "diagnosis" / "trend_parts", "gpg_swap_folds8"),
    (SWAP / "diagnosis" / "trend_parts", "gpg_swap_pooled_long_folds8"),
    (SWAP / "diagnosis" / "optimism_window", "gpg_swap_optimism"),
    (SWAP / "diagnosis" / "optimism_fixed", "gpg_swap_optimism"),
)


def main() -> None:
    print("| setting | final | last five | runs ending below 0 | below 0 after the first above 50 |")
    print("|---|---|---|---|---|")
    for root, setting in SETTINGS:
        folders = [swap_rules.run(root, TASK, setting, seed) for seed in swap_rules.SIX_SEEDS]
        if not all((folder / "meta.json").is_file() for folder in folders):
            print(f"| `{setting}` ({root.name}) | not yet run on every seed | | | |")
            continue
        curves = [evaluations(folder)[1] for folder in folders]
        finals, last_five = (np.array([swap_rules.final(folder, metric) for folder in folders]) for metric in (0, 1))
        after = [curve[np.argmax(curve > 50) + 1 :] if (curve > 50).any() else curve[:0] for curve in curves]
        drops, total = sum(int((values < 0).sum()) for values in after), sum(len(values) for values in after)
        cells = [f"{values.mean():.1f} ± {values.std():.1f}" for values in (finals, last_five)]
        print(f"| `{setting}` ({root.name}) | {' | '.join(cells)} | {int((finals < 0).sum())} of 6 | {drops} of {total} |")


if __name__ == "__main__":
    main()
