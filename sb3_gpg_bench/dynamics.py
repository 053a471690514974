"""
How GPG's and PPO's trainings differ on a task, from the training logs that ``sb3_gpg_bench.suite`` keeps: per task, a
figure of each logged quantity against env steps (mean over seeds, with their range) and a table of its median over
each quarter of training (robust to the rollouts whose returns barely vary, whose explained variance alone can read
hundreds below 0), averaged over seeds, one row per setting. What the swap's losing tasks are diagnosed with: the
episode length, the policy's noise (``train/std``) and entropy, the update's KL and clip fraction, and how much of the
returns the baseline (GPG) or the critic (PPO, with ``critic_variants.ReturnsExplained``) explains on the same footing.

    python -m sb3_gpg_bench.dynamics --runs benchmarks/swap/diagnosis/runs benchmarks/swap/sound_default/runs \
        --settings ppo_diagnosis gpg_swap_sound --seeds 101 --out benchmarks/swap/diagnosis
"""

import argparse
import itertools
import re
from itertools import pairwise
from pathlib import Path

import numpy as np

from sb3_gpg_bench.figures import plot_band, save_png
from sb3_gpg_bench.suite import read_training_log

# What is compared, by its logged key: GPG and PPO log these under the same names, but for the explained variance
QUANTITIES = {
    "rollout/ep_len_mean": "episode length",
    "rollout/ep_rew_mean": "episode return (training)",
    "train/std": "action noise (std)",
    "train/entropy_loss": "entropy loss",
    "train/approx_kl": "approximate KL",
    "train/clip_fraction": "clip fraction",
    "explained": "returns explained (held out / critic)",
    "diagnosis/advantage_std": "advantages' std (critic_variants.AdvantageSignal)",
    "diagnosis/advantage_logstd_corr": "advantages' correlation with the log-std score",
    "diagnosis/mean_gradient_agreement": "parts' agreement on the mean's gradient",
    "diagnosis/advantage_reward_corr": "advantages' correlation with their step's reward",
}
# the baseline's held-out explained variance (GPG) and the critic's on the same footing (PPO, ReturnsExplained)
EXPLAINED_KEYS = (
    "train/baseline_explained_variance",
    "gpg/baseline_explained_variance",  # older runs'
    "diagnosis/returns_explained_variance",
)
QUARTERS = 4
RUN_NAME = re.compile(r"^(?P<task>[^_]+)__(?P<setting>.+)__seed(?P<seed>\d+)$")


def series(folder: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """:return: per compared quantity the run logged, its steps and values"""
    logged = read_training_log(folder)
    found = {}
    for key in QUANTITIES:
        keys = EXPLAINED_KEYS if key == "explained" else (key,)
        rows = next((logged[name] for name in keys if logged.get(name)), None)
        if rows:
            steps, values = np.asarray(rows, dtype=float).T
            found[key] = steps, values
    return found


def runs_by_task(runs: list[Path], settings: list[str], seeds: list[int] | None = None) -> dict[str, dict[str, list[Path]]]:
    """
    :param seeds: the seeds kept; None: all
    :return: per task, per setting (in the order given), the run folders found under the folders ``runs``
    """
    found: dict[str, dict[str, list[Path]]] = {}
    for folder in sorted(folder for parent in runs for folder in parent.iterdir()):
        match = RUN_NAME.match(folder.name)
        if not match or (seeds is not None and int(match["seed"]) not in seeds):
            continue
        if match["setting"] in settings and (folder / "meta.json").exists():
            found.setdefault(match["task"], {name: [] for name in settings})[match["setting"]].append(folder)
    return found


def quarter_medians(logged: list[tuple[np.ndarray, np.ndarray]]) -> list[float]:
    """:return: the median over each quarter of the longest run's steps, averaged over the runs that logged in it"""
    budget = max(steps[-1] for steps, _ in logged)
    edges = np.linspace(0, budget, QUARTERS + 1)
    edges[-1] = np.inf
    means = []
    for low, high in pairwise(edges):
        windows = [values[(steps > low) & (steps <= high)] for steps, values in logged]
        per_run = [np.nanmedian(window) for window in windows if len(window)]
        means.append(float(np.mean(per_run)) if per_run else float("nan"))
    return means


def report(runs: list[Path], settings: list[str], out: Path, seeds: list[int] | None = None) -> str:
    """
    Write ``dynamics.md`` and ``dynamics_<task>.png`` for the runs of ``settings`` (and ``seeds``; None: all) under the
    folders ``runs``, on the tasks that every setting ran.

    :return: the table
    """
    lines = [
        "Per task, setting and quantity: its median over each quarter of training, averaged over the seeds that "
        "logged it (`sb3_gpg_bench.dynamics`).",
        "",
        "| task | quantity | setting | seeds | " + " | ".join(f"quarter {q + 1}" for q in range(QUARTERS)) + " |",
        "|---|---|---|---|" + "---|" * QUARTERS,
    ]
    out.mkdir(parents=True, exist_ok=True)
    for task, by_setting in sorted(runs_by_task(runs, settings, seeds).items()):
        if not all(by_setting.values()):  # a comparison: the tasks that every setting ran
            continue
        logs = {name: [series(folder) for folder in folders] for name, folders in by_setting.items()}
        for key, label in QUANTITIES.items():
            for name, per_run in logs.items():
                logged = [run[key] for run in per_run if key in run]
                if logged:
                    cells = " | ".join(f"{value:.3g}" for value in quarter_medians(logged))
                    lines.append(f"| {task} | {label} | {name} | {len(logged)} | {cells} |")
        _plot(task, logs, out / f"dynamics_{task}.png")
    table = "\n".join(lines) + "\n"
    (out / "dynamics.md").write_text(table)
    return table


def _plot(task: str, logs: dict[str, list[dict[str, tuple[np.ndarray, np.ndarray]]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = -(-len(QUANTITIES) // 4)
    figure, axes = plt.subplots(rows, 4, figsize=(16, 3.2 * rows), squeeze=False)
    # each setting in one colour on every panel, whichever quantities it logged
    colors = dict(zip(logs, itertools.cycle(plt.rcParams["axes.prop_cycle"].by_key()["color"]), strict=False))
    for axis, (key, label) in zip(axes.flat, QUANTITIES.items(), strict=False):
        for name, per_run in logs.items():
            logged = [run[key] for run in per_run if key in run]
            if logged:
                plot_band(axis, logged, f"{name} ({len(logged)})", color=colors[name])
        axis.set(title=label, xlabel="env steps")
        if key == "explained":
            # a rollout whose returns barely vary reads hundreds below 0: the scale that matters is above -1
            axis.set_ylim(bottom=-1.0, top=1.05)
        axis.grid(alpha=0.3)
    for axis in axes.flat[len(QUANTITIES) :]:
        axis.set_visible(False)
    axes.flat[0].legend(fontsize=7)
    figure.suptitle(f"{task}: mean over seeds, band: their range", fontsize=10)
    figure.tight_layout()
    save_png(figure, path, dpi=70)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=Path, nargs="+", required=True, help="folders of runs (<task>__<setting>__seed<n>)")
    parser.add_argument("--seeds", type=int, nargs="+", help="the seeds compared (default: every seed found)")
    parser.add_argument("--settings", nargs="+", required=True, help="the settings compared, in this order")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    print(report(args.runs, args.settings, args.out, args.seeds))


if __name__ == "__main__":
    main()
