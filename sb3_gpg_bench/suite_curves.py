"""
A suite's learning curves, one small figure per task (``curves/<task>.png``): each setting's evaluation return over
training, the mean over the counted seeds with one standard deviation either side shaded (NumPy's ``np.std``, ddof 0,
as every ± of the suite's tables), on the same runs as the report's tables (``suite_report.report`` writes them beside
``table.md``; ``counted_found`` picks them from several suite folders for a figure of settings run apart).

The figures are made to be committed and made again byte for byte: the Agg canvas without pyplot, matplotlib's default
style whatever the user's matplotlibrc says, a fixed size and dpi, and no software version in the PNG. The rendering
still depends on matplotlib's and Pillow's versions (its rasteriser and fonts, the PNG encoder), which
``curves/rendered_with.json`` records so that a check of the committed bytes knows when it applies.
"""

import functools
import json
from pathlib import Path

import numpy as np

from sb3_gpg_bench.suite_finals import Found, counted_runs, read_finals
from sb3_gpg_bench.suite_report import finished_runs
from sb3_gpg_bench.suites import Suite
from sb3_gpg_bench.timing import evaluations

CURVES = "curves"  # the folder of the figures, in the suite's folder
RENDERED_WITH = "rendered_with.json"
FIGURE_SIZE = (4.0, 2.8)  # inches: 400 x 280 pixels at DPI, two side by side in the docs
DPI = 100


def counted_found(
    suite: Suite, folders: list[Path], tasks: list[str], settings: list[str] | None = None, seeds: list[int] | None = None
) -> Found:
    """
    The runs the report would count, from the ``runs/`` of several suite folders (a setting run apart from the
    reference's runs, say): each folder's ``finals.json`` applies to its own runs where ``seeds`` is None.

    :param folders: suite folders, each with its ``runs/``
    :param settings: the settings to read, by name (None: the suite's)
    :param seeds: the seeds to read (None: those each folder's ``finals.json`` counts, else every seed found)
    :return: per (task, setting name), the runs' folders by seed
    :raises ValueError: for a run found in two folders (which of the two counts would be a guess)
    """
    found: Found = {}
    for folder in folders:
        runs = finished_runs(suite, folder, tasks, settings, seeds)
        if seeds is None:
            runs = counted_runs(runs, read_finals(folder))
        for key, by_seed in runs.items():
            both = sorted(set(found.get(key, {})) & set(by_seed))
            if both:
                raise ValueError(f"{key[0]} {key[1]} seeds {both} are in {found[key][both[0]].parent} and {folder / 'runs'}")
            found.setdefault(key, {}).update(by_seed)
    # the suite's order of tasks and settings, whatever the folders' order
    order = {(env_id, setting.name): i for i, (env_id, setting) in enumerate((t, s) for t in tasks for s in suite.settings)}
    return dict(sorted(found.items(), key=lambda item: order[item[0]]))


def write_task_curves(
    suite: Suite, found: Found, tasks: list[str], folder: Path, drawn_from: list[str] | None = None
) -> list[Path]:
    """
    Write ``<task>.png`` into ``folder`` for each task with runs, and ``rendered_with.json``.

    :param found: per (task, setting name), the counted runs' folders by seed
    :param drawn_from: the suite folders the runs were read from, where not the one ``folder`` is in (the ``curves``
        command's): recorded, so that a ``report`` of that folder leaves these figures as they are
    :return: the figures written
    """
    import matplotlib
    import PIL

    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for env_id in tasks:
        per_setting = {name: runs for (task, name), runs in found.items() if task == env_id}
        if per_setting:
            written.append(folder / f"{env_id}.png")
            plot_task(suite, env_id, per_setting, written[-1])
    record: dict = {"matplotlib": matplotlib.__version__, "pillow": PIL.__version__}
    if drawn_from:
        record["drawn_from"] = drawn_from
    (folder / RENDERED_WITH).write_text(json.dumps(record, indent=1) + "\n")
    return written


def drawn_elsewhere(folder: Path) -> bool:
    """:return: whether the figures in ``folder`` were drawn from other folders' runs (``write_task_curves``)"""
    record = folder / RENDERED_WITH
    return record.exists() and bool(json.loads(record.read_text()).get("drawn_from"))


def mean_std(runs: dict[int, Path]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    :param runs: the runs' folders by seed
    :return: the steps at which every run was evaluated (within its budget), and the mean and the standard deviation
        (ddof 0) over the runs of the evaluation return there
    """
    # sorted by seed: the same sums in the same order, whatever order the folders were listed in
    per_seed = [evaluations(runs[seed]) for seed in sorted(runs)]
    # a mean over seeds never mixes steps
    steps = functools.reduce(np.intersect1d, [own_steps for own_steps, _ in per_seed])
    values = np.array([returns[np.isin(own_steps, steps)] for own_steps, returns in per_seed])
    return steps, values.mean(axis=0), values.std(axis=0)


def plot_task(suite: Suite, env_id: str, per_setting: dict[str, dict[int, Path]], path: Path) -> None:
    """
    One task's figure: per setting, the mean over seeds of each evaluation's return against env steps, with one
    standard deviation shaded; the reference dashed and last; the number of seeds in the legend.

    :param per_setting: per setting name, the runs' folders by seed
    """
    import matplotlib.style
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    algos = {setting.name: setting.algo for setting in suite.settings}
    names = sorted(per_setting, key=lambda name: name == suite.reference)  # stable: the others in their order first
    with matplotlib.style.context("default"):
        figure = Figure(figsize=FIGURE_SIZE, dpi=DPI)
        FigureCanvasAgg(figure)
        axis = figure.add_subplot()
        for color, name in enumerate(names):
            steps, mean, std = mean_std(per_setting[name])
            label = algos.get(name, name).upper() + ("" if name == algos.get(name) else f", {name}")
            seeds = len(per_setting[name])
            axis.plot(steps, mean, color=f"C{color}", linestyle="--" if name == suite.reference else "-",
                      label=f"{label} ({seeds} seed{'s' if seeds != 1 else ''})")  # fmt: skip
            axis.fill_between(steps, mean - std, mean + std, color=f"C{color}", alpha=0.2, linewidth=0)
        axis.set_title(env_id, fontsize=10)
        axis.set_xlabel("env steps", fontsize=8)
        axis.set_ylabel("evaluation return, mean ± std", fontsize=8)
        axis.tick_params(labelsize=7)
        axis.xaxis.get_offset_text().set_fontsize(7)
        axis.legend(fontsize=7)
        figure.tight_layout(pad=0.4)
        # no "Software" text chunk: the bytes do not name matplotlib's version
        figure.savefig(path, dpi=DPI, metadata={"Software": None})
