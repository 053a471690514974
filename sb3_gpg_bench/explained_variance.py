"""
How much of the returns each run's baseline or critic explained over training, from the ``training_log.json`` that
``sb3_gpg_bench.suite`` keeps: ``explained_variance.md`` (per task, setting and measure, the mean over each quarter of
the budget, mean ± std over seeds) and ``explained_variance.png`` (the mean over seeds against steps, with the seeds'
range).

Every measure scores predictions made before the update that uses them:

- ``returns`` (GPG's ``train/baseline_explained_variance``, ``gpg/baseline_explained_variance`` in older runs, and
  ``diagnosis/returns_explained_variance`` of PPO runs with ``critic_variants.ReturnsExplained``): the baseline or the
  critic's values against the Monte-Carlo returns, the ones the rollout's end cuts completed by the value after it
  (GPG's under ``truncated_returns="bootstrap"``; under ``"keep"`` its returns are left cut, PPO's ``cut returns``
  row); GPG's baseline is cross-fitted, so no trajectory's returns enter its own prediction.
- ``cut returns`` (``diagnosis/cut_returns_explained_variance``): PPO's values against the same returns left cut.
- ``lambda-returns`` (SB3's ``train/explained_variance`` of PPO): the critic's values against lambda-returns built from
  those same values, which flatters them.
"""

from itertools import pairwise
from pathlib import Path

import numpy as np

from sb3_gpg_bench.figures import plot_band, save_png
from sb3_gpg_bench.suite import read_training_log
from sb3_gpg_bench.suites import Suite
from sb3_gpg_bench.timing import meta

# The logged keys and what each measures
MEASURES = {
    "train/baseline_explained_variance": "returns",
    "gpg/baseline_explained_variance": "returns",
    "diagnosis/returns_explained_variance": "returns",
    "diagnosis/cut_returns_explained_variance": "cut returns",
    "train/explained_variance": "lambda-returns",
}
QUARTERS = 4
COLUMNS = 4  # panels per row of the figure
Series = dict[tuple[str, str, str], dict[int, tuple[np.ndarray, np.ndarray]]]


def explained_series(folder: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """
    :param folder: a finished run's folder
    :return: per measure the run logged, the steps and the explained variance logged at each (GPG's older runs logged
        their in-sample one as ``train/explained_variance``: left out beside the held-out one)
    """
    logged = read_training_log(folder)
    series = {}
    for key, measure in MEASURES.items():
        if logged.get(key) and measure not in series:
            steps, values = np.asarray(logged[key], dtype=float).T
            series[measure] = steps, values
    if logged.get("gpg/baseline_explained_variance") or logged.get("train/baseline_explained_variance"):
        series.pop("lambda-returns", None)
    return series


def explained_report(suite: Suite, found: dict[tuple[str, str], dict[int, Path]], out: Path) -> str:
    """
    Write ``explained_variance.md`` and ``explained_variance.png`` for the runs that kept a training log.

    :param found: per (task, setting name), the finished runs' folders by seed (``suite_report.finished_runs``)
    :return: the table, or "" where no run kept a log
    """
    series: Series = {}
    for (env_id, name), runs in found.items():
        for seed, folder in runs.items():
            for measure, logged in explained_series(folder).items():
                series.setdefault((env_id, name, measure), {})[seed] = logged
    if not series:
        return ""
    budget = max(meta(folder)["n_timesteps"] for runs in found.values() for folder in runs.values())
    edges = np.linspace(0, budget, QUARTERS + 1)
    header = " | ".join(f"{int(low) // 1000}k-{int(high) // 1000}k" for low, high in pairwise(edges))
    edges[-1] = np.inf  # the last rollout may end past the budget
    lines = [
        "How much of the returns the baseline (GPG) or the critic (PPO) explained, before the update that uses it: the "
        "mean over each quarter of training, mean ± std over seeds. *returns*: against the Monte-Carlo returns, cut ones "
        "completed (GPG's held out, and cut where its entry keeps them so); *cut returns*: PPO's against the same "
        "returns left cut; *lambda-returns*: SB3's, against lambda-returns built from the critic's own values "
        "(`sb3_gpg_bench.explained_variance`).",
        "",
        f"| task | setting | measure | seeds | {header} |",
        "|---|---|---|---|" + "---|" * QUARTERS,
    ]
    for (env_id, name, measure), logs in sorted(series.items(), key=lambda item: _order(suite, *item[0])):
        cells = []
        for low, high in pairwise(edges):
            windows = [values[(steps > low) & (steps <= high)] for steps, values in logs.values()]
            means = [window.mean() for window in windows if len(window)]
            cells.append(f"{np.mean(means):.2f} ± {np.std(means):.2f}" if means else "-")
        lines.append(f"| {env_id} | {name} | {measure} | {len(logs)} | {' | '.join(cells)} |")
    table = "\n".join(lines) + "\n"
    (out / "explained_variance.md").write_text(table)
    _plot(series, suite, out / "explained_variance.png")
    return table


def _order(suite: Suite, env_id: str, name: str, measure: str) -> tuple[int, int, str]:
    names = [setting.name for setting in suite.settings]
    return suite.tasks.index(env_id), names.index(name) if name in names else len(names), measure


def _plot(series: Series, suite: Suite, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = [env_id for env_id in suite.tasks if any(key[0] == env_id for key in series)]
    columns = min(len(tasks), COLUMNS)
    rows = -(-len(tasks) // columns)
    figure, axes = plt.subplots(rows, columns, figsize=(5 * columns, 3.6 * rows), squeeze=False)
    for axis in axes.flat[len(tasks) :]:
        axis.set_visible(False)
    for axis, env_id in zip(axes.flat, tasks, strict=False):
        for key in sorted((key for key in series if key[0] == env_id), key=lambda key: _order(suite, *key)):
            runs = series[key]
            style = "-" if key[2] == "returns" else ":"
            plot_band(axis, list(runs.values()), f"{key[1]}, {key[2]} ({len(runs)})", style, alpha=0.12)
        axis.set(title=env_id, xlabel="env steps", ylabel="explained variance", ylim=(-0.5, 1.0))
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7)
    figure.tight_layout()
    save_png(figure, path, dpi=70)
    plt.close(figure)
