"""The one-rollout fit's screen (README.md): per gpg.yml entry with ``fourier: 0``, the final evaluation on tuning seeds
100 and 101 with the features fitted whole (``whole/``) against the code before (``current/``), and the rule's verdict.

    python benchmarks/one_rollout_fit/screen.py
"""

from pathlib import Path

import numpy as np

from sb3_gpg_bench.suite_report import evaluations

HERE = Path(__file__).parent
TASKS = ("Swimmer-v5", "HalfCheetah-v5", "Hopper-v5", "Pendulum-v1")
SEEDS = (100, 101)


def finals(arm: str, task: str) -> tuple[np.ndarray, np.ndarray]:
    """:return: each seed's final evaluation and mean of the last five"""
    values = [evaluations(HERE / arm / "runs" / f"{task}__gpg__seed{seed}")[1] for seed in SEEDS]
    return np.array([v[-1] for v in values]), np.array([v[-5:].mean() for v in values])


def main() -> None:
    print("| task | current code | features whole | difference | larger spread | verdict | last five, current / whole |")
    print("|---|---|---|---|---|---|---|")
    verdicts = {}
    for task in TASKS:
        (current, current_five), (whole, whole_five) = finals("current", task), finals("whole", task)
        difference, spread = whole.mean() - current.mean(), max(current.std(), whole.std())
        verdict = "behind" if difference < -spread else ("ahead" if difference > spread else "level")
        verdicts[task] = verdict
        arms = f"{current.mean():.1f} ± {current.std():.1f} | {whole.mean():.1f} ± {whole.std():.1f}"
        fives = f"{current_five.mean():.1f} / {whole_five.mean():.1f}"
        print(f"| {task} | {arms} | {difference:+.1f} | {spread:.1f} | {verdict} | {fives} |")
    adopted = verdicts["Swimmer-v5"] == "ahead" and "behind" not in verdicts.values()
    print(f"\nThe rule: {'adopted' if adopted else 'not adopted'}")


if __name__ == "__main__":
    main()
