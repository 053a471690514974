"""
How much of the returns each run's baseline or critic explained over training, from the ``training_log.json`` that
``sb3_gpg_bench.suite`` keeps: ``explained_variance.md`` (per task and setting, the mean over each quarter of the
budget, mean ± std over seeds) and ``explained_variance.png`` (the mean over seeds against steps, with the seeds'
range).

Both read predictions made before the update that uses them: PPO's critic's values of the rollout, collected before
the critic trains on it, against its lambda-returns (SB3's ``train/explained_variance``); GPG's cross-fitted baseline,
fitted without the sample's own trajectory, against its returns (``gpg/baseline_explained_variance``).
"""

import json
from itertools import pairwise
from pathlib import Path

import numpy as np

from sb3_gpg_bench.suites import Suite

# The logged keys, in order of preference: GPG's out-of-fold baseline first (GPG's train/ value is in-sample where the
# baseline is the bins')
EXPLAINED_KEYS = ("gpg/baseline_explained_variance", "train/baseline_explained_variance", "train/explained_variance")
QUARTERS = 4


def explained_series(folder: Path) -> tuple[np.ndarray, np.ndarray] | None:
    """
    :param folder: a finished run's folder
    :return: the steps and the explained variance logged at each, by the first of ``EXPLAINED_KEYS`` the run logged;
        None for a run without a training log
    """
    path = folder / "training_log.json"
    if not path.exists():
        return None
    logged = json.loads(path.read_text())
    for key in EXPLAINED_KEYS:
        if logged.get(key):
            steps, values = np.asarray(logged[key], dtype=float).T
            return steps, values
    return None


def explained_report(suite: Suite, found: dict[tuple[str, str], dict[int, Path]], out: Path) -> str:
    """
    Write ``explained_variance.md`` and ``explained_variance.png`` for the runs that kept a training log.

    :param found: per (task, setting name), the finished runs' folders by seed (``suite_report.finished_runs``)
    :return: the table, or "" where no run kept a log
    """
    series = {
        pair: {seed: logged for seed, folder in runs.items() if (logged := explained_series(folder)) is not None}
        for pair, runs in found.items()
    }
    series = {pair: runs for pair, runs in series.items() if runs}
    if not series:
        return ""
    budget = max(steps[-1] for runs in series.values() for steps, _ in runs.values())
    edges = np.linspace(0, budget, QUARTERS + 1)
    header = " | ".join(f"{int(low) // 1000}k-{int(high) // 1000}k" for low, high in pairwise(edges))
    lines = [
        "How much of the returns the baseline (GPG) or the critic (PPO) explained, before the update that uses it: the "
        "mean over each quarter of training, mean ± std over seeds (`sb3_gpg_bench.explained_variance`).",
        "",
        f"| task | setting | seeds | {header} |",
        "|---|---|---|" + "---|" * QUARTERS,
    ]
    for env_id in suite.tasks:
        for setting in suite.settings:
            runs = series.get((env_id, setting.name))
            if not runs:
                continue
            cells = []
            for low, high in pairwise(edges):
                means = [values[(steps > low) & (steps <= high)] for steps, values in runs.values()]
                means = [window.mean() for window in means if len(window)]
                cells.append(f"{np.mean(means):.2f} ± {np.std(means):.2f}" if means else "-")
            lines.append(f"| {env_id} | {setting.name} | {len(runs)} | {' | '.join(cells)} |")
    table = "\n".join(lines) + "\n"
    (out / "explained_variance.md").write_text(table)
    _plot(series, suite, out / "explained_variance.png")
    return table


def _plot(series: dict[tuple[str, str], dict[int, tuple[np.ndarray, np.ndarray]]], suite: Suite, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = [env_id for env_id in suite.tasks if any(pair[0] == env_id for pair in series)]
    figure, axes = plt.subplots(1, len(tasks), figsize=(6 * len(tasks), 4), squeeze=False)
    for axis, env_id in zip(axes[0], tasks, strict=True):
        for setting in suite.settings:
            runs = series.get((env_id, setting.name))
            if not runs:
                continue
            grid = np.linspace(0, min(steps[-1] for steps, _ in runs.values()), 200)
            curves = np.array([np.interp(grid, steps, values) for steps, values in runs.values()])
            (line,) = axis.plot(grid, curves.mean(axis=0), label=f"{setting.name} ({len(runs)})")
            axis.fill_between(grid, curves.min(axis=0), curves.max(axis=0), color=line.get_color(), alpha=0.15)
        axis.set(title=env_id, xlabel="env steps", ylabel="explained variance", ylim=(-0.5, 1.0))
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
