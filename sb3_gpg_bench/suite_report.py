"""
Tables and plots of a grid run by ``sb3_gpg_bench.suite``: per task and setting (``table.md``, ``curves.png``, and a
figure per task in ``curves/``: ``sb3_gpg_bench.suite_curves``) and, for a grid against PPO with the random policy's
scores measured, the aggregate across tasks the rliable way (``aggregate.md``, ``profile.png``): PPO-normalised scores,
the interquartile mean with its 95% stratified bootstrap interval, the probability of improvement and the performance
profile; and the README's table (``headline.md``).
Wall times are compared only under the same load, beside each run's updates, parameters and time to score
(``sb3_gpg_bench.timing``: ``timing.md``, ``time_to_score.png``), and, for runs that kept their training log, how much
of the returns each baseline or critic explained (``sb3_gpg_bench.explained_variance``).

A run's score is its last evaluation within its budget; the mean of its last five evaluations is reported beside it.
"""

import json
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from sb3_gpg_bench.explained_variance import explained_report
from sb3_gpg_bench.figures import save_png
from sb3_gpg_bench.suite import Run
from sb3_gpg_bench.suite_finals import counted_runs, disclosure, earlier_runs, earliest_sets, read_finals
from sb3_gpg_bench.suites import Suite
from sb3_gpg_bench.timing import evaluations, timing, wall_time_note, wall_times

BOOTSTRAP_REPS = 2000


def finished_runs(
    suite: Suite, out: Path, tasks: list[str], settings: list[str] | None = None, seeds: list[int] | None = None
) -> dict[tuple[str, str], dict[int, Path]]:
    """
    :param settings: the settings to read, by name (None: the suite's)
    :param seeds: the seeds to read (None: every seed found)
    :return: per (task, setting name), the finished runs' folders by seed
    """
    found: dict[tuple[str, str], dict[int, Path]] = {}
    for env_id in tasks:
        for setting in suite.settings:
            if settings is not None and setting.name not in settings:
                continue
            for folder in (out / "runs").glob(f"{Run(env_id, setting, 0).name[:-1]}*"):
                seed = int(folder.name.rsplit("seed", 1)[1])
                if (folder / "meta.json").exists() and (seeds is None or seed in seeds):
                    found.setdefault((env_id, setting.name), {})[seed] = folder
    return found


def scores(runs: dict[int, Path]) -> tuple[dict[int, float], dict[int, float]]:
    """
    :return: per seed, the final evaluation and the mean of the last five
    """
    per_seed = {seed: evaluations(folder)[1] for seed, folder in runs.items()}
    return {seed: float(values[-1]) for seed, values in per_seed.items()}, {
        seed: float(values[-5:].mean()) for seed, values in per_seed.items()
    }


def report(
    suite: Suite, out: Path, tasks: list[str] | None = None, settings: list[str] | None = None, seeds: list[int] | None = None
) -> str:
    """
    Write ``table.md``, ``curves.png`` and a figure per task (``curves/<task>.png``, ``suite_curves``) from the finished
    runs in ``out/runs``, and the aggregate where it applies (``aggregate``).

    :param tasks: a subset of the suite's tasks
    :param settings: a subset of the suite's settings, by name
    :param seeds: the seeds to report (None: every seed found)
    :return: the tables
    """
    whole_grid = tasks is None and settings is None and seeds is None
    tasks = tasks or suite.tasks
    found = finished_runs(suite, out, tasks, settings, seeds)
    # the seeds asked for, or else the runs finals.json counts
    finals = read_finals(out) if seeds is None else {}
    found = counted_runs(found, finals)
    if not found:
        return f"No finished runs of these tasks in {out / 'runs'}.\n"
    # a task of the suite that no setting has run here gets a sentence, not a row of empty cells
    ran = {env_id for env_id, _ in found}
    missing = [env_id for env_id in tasks if env_id not in ran]
    tasks = [env_id for env_id in tasks if env_id not in missing]
    lines = [
        f"| task | setting | seeds | final evaluation | mean of last five | vs {suite.reference} (same seeds; ratio, "
        "or difference where its mean is not positive) | wall time (min), same load |",
        "|---|---|---|---|---|---|---|",
    ]
    # per (task, setting): the final evaluations and the means of the last five, by seed; read once
    scored = {key: scores(runs) for key, runs in found.items()}
    wall = wall_times(found, tasks)
    for env_id in tasks:
        reference = scored[(env_id, suite.reference)][0] if (env_id, suite.reference) in scored else {}
        for setting in suite.settings:
            if (env_id, setting.name) not in found:
                continue
            runs = found[(env_id, setting.name)]
            final, last_five = scored[(env_id, setting.name)]
            shared = sorted(set(reference) & set(final))
            ratio = ""
            if shared and setting.name != suite.reference:
                reference_mean = np.mean([reference[seed] for seed in shared])
                own_mean = np.mean([final[seed] for seed in shared])
                ratio = f"{own_mean / reference_mean:.2f}" if reference_mean > 0 else f"{own_mean - reference_mean:+.1f}"
            lines.append(
                f"| {env_id} | {setting.name} | {len(runs)} | {_mean_std(final)} | {_mean_std(last_five)} | {ratio} | "
                f"{_minutes(wall[(env_id, setting.name)])} |"
            )
    table = "\n".join(lines) + "\n\n" + (f"No runs here of: {', '.join(missing)}.\n\n" if missing else "")
    table += wall_time_note(found) + "\n"
    (out / "table.md").write_text(table)
    plot_curves(found, tasks, suite.reference, out / "curves.png")
    # imported here: suite_curves reads the runs with this module's finished_runs
    from sb3_gpg_bench.suite_curves import CURVES, drawn_elsewhere, write_task_curves

    if not drawn_elsewhere(out / CURVES):  # figures of runs in several folders are the curves command's to redraw
        write_task_curves(suite, found, tasks, out / CURVES)
    if (out / "random_scores.json").exists() and any(key[1] == "ppo" for key in found):
        # per metric (0: final evaluation, 1: mean of the last five), the normalised scores, read once for both
        per_metric, left_out = {}, set()
        for metric in (0, 1):
            per_metric[metric], left = normalised(suite, out, tasks, scored, metric)
            left_out |= set(left)
        text, summary = aggregate(suite, out, tasks, per_metric, left_out)
        table += "\n" + text
        if whole_grid:
            replaced = _disclosure(suite, out, tasks, finals, scored, per_metric)
            headline(suite, out, tasks, found, scored, per_metric, summary, wall, replaced)
    ppo_finals = {task: float(np.mean(list(scored[(task, "ppo")][0].values()))) for task in tasks if (task, "ppo") in found}
    random = json.loads((out / "random_scores.json").read_text()) if (out / "random_scores.json").exists() else {}
    floors = {task: random.get(task, {}).get("mean", 0.0) for task in tasks}
    algos = {setting.name: setting.algo for setting in suite.settings}
    explained = explained_report(suite, found, out)
    return table + "\n" + timing(out, tasks, found, algos, ppo_finals, floors) + (f"\n{explained}" if explained else "")


def _disclosure(
    suite: Suite,
    out: Path,
    tasks: list[str],
    finals: dict,
    scored: dict,
    per_metric: dict[int, dict[str, dict[str, dict[int, float]]]],
) -> str:
    """
    :return: ``suite_finals.disclosure``'s text: each replaced or remade set of final runs in words, with its scores and
        PPO-normalised mean, and the aggregate that counts each task's earliest final runs instead
    """
    sets = earlier_runs(out, finals)

    def in_words(final: dict[int, float], normalised_final: dict[int, float] | None) -> str:
        words = f"{_mean_std(final)} ({len(final)})"
        return words if normalised_final is None else f"{words}, PPO-normalised {np.mean(list(normalised_final.values())):.2f}"

    summaries = {
        (env_id, name): in_words(scored[(env_id, name)][0], per_metric[0].get(name, {}).get(env_id))
        for env_id, name in scored
        if name in finals.get(env_id, {})
    }
    for env_id, name, why, runs in sets:
        if runs:
            earlier = {**scored, (env_id, name): scores(runs)}
            earlier_normalised = normalised(suite, out, [env_id], earlier, 0)[0].get(name, {}).get(env_id)
            summaries[(env_id, why)] = in_words(earlier[(env_id, name)][0], earlier_normalised)
    earliest_summary = ""
    if any(runs for *_, runs in sets):
        earliest = {**scored, **{key: scores(runs) for key, runs in earliest_sets(sets).items()}}
        earliest_metric = {metric: normalised(suite, out, tasks, earliest, metric)[0] for metric in (0, 1)}
        earliest_summary = aggregate(suite, out, tasks, earliest_metric, set(), write=False)[1]
    return disclosure(finals, sets, summaries, earliest_summary)


def headline(
    suite: Suite,
    out: Path,
    tasks: list[str],
    found: dict[tuple[str, str], dict[int, Path]],
    scored: dict,
    per_metric: dict[int, dict[str, dict[str, dict[int, float]]]],
    summary: str,
    wall: dict[tuple[str, str], float | None],
    replaced: str = "",
) -> str:
    """
    Write ``headline.md``, what the README shows (written by a report of the whole grid only): per task each setting's
    final evaluation (mean ± std, seeds), the others' PPO-normalised mean (of the final evaluations; of the means of
    the last five) and the wall time per run under the same load, then the aggregate's summary and what the wall times
    are.

    :param found: per (task, setting name), the finished runs' folders by seed
    :param scored: per (task, setting name), ``scores`` of its runs
    :param per_metric: per metric (0: final evaluation, 1: mean of the last five), ``normalised``'s scores
    :param summary: the aggregate in a sentence (``aggregate``)
    :param wall: per (task, setting name), the wall time per run (min) under the task's shared load (``wall_times``)
    :param replaced: the final runs replaced or made again, and the earlier ones (``suite_finals.disclosure``)
    :return: the text
    """
    names = [setting.name for setting in suite.settings if any((env_id, setting.name) in found for env_id in tasks)]
    others = [name for name in names if name != "ppo"]
    columns = [name.upper() for name in names] + [f"{name.upper()}, PPO-normalised (final; last five)" for name in others]
    lines = [
        "| task | " + " | ".join(columns) + f" | wall time (min), {' / '.join(name.upper() for name in names)} |",
        "|---" * (len(columns) + 2) + "|",
    ]
    for env_id in tasks:
        cells = [f"{_mean_std(scored[(env_id, name)][0])} ({len(found[(env_id, name)])})" if (env_id, name) in found else ""
                 for name in names]  # fmt: skip
        for name in others:
            if (env_id, name) not in found:
                cells.append("")
                continue
            means = [per_metric[metric].get(name, {}).get(env_id) for metric in (0, 1)]
            # "-": PPO's mean not above the random policy's on that metric, so no scale to normalise by
            cells.append("; ".join("-" if mean is None else f"{np.mean(list(mean.values())):.2f}" for mean in means))
        times = [_minutes(wall.get((env_id, name))) for name in names]
        lines.append(f"| {env_id} | " + " | ".join(cells) + f" | {' / '.join(times)} |")
    text = "\n".join(lines) + "\n" + (f"\n{summary}\n" if summary else "") + (f"\n{replaced}" if replaced else "")
    text += f"\n{wall_time_note(found)}\n"
    (out / "headline.md").write_text(text)
    return text


def _minutes(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _mean_std(values: dict[int, float], digits: int = 1) -> str:
    """:return: mean ± std, or the value alone where there is one"""
    array = np.array(list(values.values()))
    return f"{array.mean():.{digits}f} ± {array.std():.{digits}f}" if len(array) > 1 else f"{array[0]:.{digits}f}"


def normalised(
    suite: Suite, out: Path, tasks: list[str], scored: dict, metric: int
) -> tuple[dict[str, dict[str, dict[int, float]]], list[str]]:
    """
    :param scored: per (task, setting name), ``scores`` of its runs
    :param metric: 0 for the final evaluation, 1 for the mean of the last five
    :return: per setting and task, each seed's (score - random) / (PPO's mean - random); and the tasks left out, where
        PPO's mean is not above the random policy's (no scale to normalise by)
    :raises KeyError: for a task without the random policy's score
    """
    random = json.loads((out / "random_scores.json").read_text())
    result: dict[str, dict[str, dict[int, float]]] = {}
    left_out = []
    for env_id in tasks:
        if (env_id, "ppo") not in scored:
            continue
        if env_id not in random:
            raise KeyError(f"{out / 'random_scores.json'} has no score for {env_id}: measure it with the 'random' command")
        ppo_mean = float(np.mean(list(scored[(env_id, "ppo")][metric].values())))
        floor = random[env_id]["mean"]
        if ppo_mean <= floor:
            left_out.append(env_id)
            continue
        for setting in suite.settings:
            if (env_id, setting.name) in scored:
                per_seed = scored[(env_id, setting.name)][metric]
                result.setdefault(setting.name, {})[env_id] = {
                    seed: (value - floor) / (ppo_mean - floor) for seed, value in per_seed.items()
                }
    return result, left_out


def aggregate(
    suite: Suite,
    out: Path,
    tasks: list[str],
    per_metric: dict[int, dict[str, dict[str, dict[int, float]]]],
    left_out: set[str],
    write: bool = True,
) -> tuple[str, str]:
    """
    Write ``aggregate.md`` and ``profile.png``: per task the PPO-normalised mean of each setting, and across the tasks
    that every setting has run, rliable's IQM with its 95% stratified bootstrap interval, the probability that each
    setting improves on PPO, and the performance profile, on as many runs of every task for every setting as the
    setting with the fewest has (each task's lowest seeds).

    :param per_metric: per metric (0: final evaluation, 1: mean of the last five), ``normalised``'s scores
    :param left_out: the tasks ``normalised`` left out on either metric
    :param write: write ``aggregate.md`` and ``profile.png`` (else only return the text)
    :return: the aggregate's tables, and the aggregate in a sentence for the README ("" where there is none)
    """
    from rliable import metrics

    final = per_metric[0]
    names = [setting.name for setting in suite.settings if setting.name in final]
    common = [env_id for env_id in tasks if all(env_id in final[name] for name in names)]
    lines = ["| task | " + " | ".join(f"{name} (final; last five)" for name in names) + " |", "|---" * (len(names) + 1) + "|"]
    for env_id in tasks:
        cells = []
        for name in names:
            if env_id not in final[name]:
                cells.append("")
                continue
            cells.append("; ".join(_mean_std(per_metric[metric][name][env_id], digits=2) for metric in (0, 1)))
        lines.append(f"| {env_id} | " + " | ".join(cells) + " |")
    text = "PPO-normalised scores, (score - random) / (PPO's mean - random), mean ± std over seeds:\n\n"
    text += "\n".join(lines) + "\n"
    if left_out:
        text += f"\nLeft out, where PPO's mean is not above the random policy's: {', '.join(sorted(left_out))}.\n"
    common = [env_id for env_id in common if env_id not in left_out]
    if not common:
        if write:
            (out / "aggregate.md").write_text(text)
        return text, ""

    # the same number of runs of every task for every setting: no setting's aggregate rests on more runs than another's
    n_runs = min(len(per_metric[metric][name][env_id]) for metric in (0, 1) for name in names for env_id in common)
    matrices = {metric: {name: _matrix(per_metric[metric][name], common, n_runs) for name in names} for metric in (0, 1)}

    def iqm(matrix: np.ndarray) -> np.ndarray:
        return np.array([metrics.aggregate_iqm(matrix)])

    text += f"\nAcross {len(common)} tasks ({', '.join(common)}), 95% stratified bootstrap intervals"
    text += f" ({BOOTSTRAP_REPS} reps):\n\n"
    text += "| setting | runs per task | IQM, final | IQM, last five | P(improves on PPO), final |\n|---|---|---|---|---|\n"
    summaries = []
    for name in names:
        estimates = {}
        for metric in (0, 1):
            point, interval = _bootstrap({name: matrices[metric][name]}, iqm)
            estimates[metric] = f"{point[name][0]:.2f} [{interval[name][0, 0]:.2f}, {interval[name][1, 0]:.2f}]"
        improvement = ""
        if name != "ppo":
            point, interval = _bootstrap({name: (matrices[0][name], matrices[0]["ppo"])}, metrics.probability_of_improvement)
            low, high = np.ravel(interval[name])
            improvement = f"{float(np.ravel(point[name])[0]):.2f} [{low:.2f}, {high:.2f}]"
        runs = matrices[0][name].shape[0]
        text += f"| {name} | {runs} | {estimates[0]} | {estimates[1]} | {improvement} |\n"
        if name != "ppo":
            summaries.append(
                f"{name.upper()}'s IQM of PPO-normalised final scores {estimates[0]} (last five: {estimates[1]}) and the "
                f"probability that it improves on PPO {improvement}, on {runs} run{'s' if runs != 1 else ''} per task"
            )
    if write:
        (out / "aggregate.md").write_text(text)
        plot_profile(matrices[0], out / "profile.png")
    summary = (
        f"Across {len(common)} tasks ({', '.join(common)}), with 95% stratified bootstrap intervals: "
        + "; ".join(summaries)
        + "."
    )
    return text, summary


def _bootstrap(scores: dict, function: Callable) -> tuple[dict, dict]:
    """:return: rliable's point estimates and 95% stratified bootstrap intervals, with a fixed bootstrap seed"""
    from rliable import library as rly

    with _fixed_bootstrap_seed():
        return rly.get_interval_estimates(scores, function, reps=BOOTSTRAP_REPS, random_state=np.random.RandomState(0))


@contextmanager
def _fixed_bootstrap_seed() -> Iterator[None]:
    """
    rliable's stratified bootstrap draws its resamples from NumPy's global generator whatever ``random_state`` says:
    seeded here, and restored after, so that the same runs give the same intervals.
    """
    global_state = np.random.get_state()
    np.random.seed(0)
    try:
        with warnings.catch_warnings():
            # rliable seeds arch's bootstrap with random_state, which arch deprecates in favour of its generator argument
            warnings.filterwarnings("ignore", "random_state is deprecated", FutureWarning)
            yield
    finally:
        np.random.set_state(global_state)


def _matrix(per_task: dict[str, dict[int, float]], tasks: list[str], n_runs: int) -> np.ndarray:
    """
    :return: the scores as rliable takes them, (runs, tasks): each task's ``n_runs`` lowest seeds (rliable pairs no
        seeds across tasks, and a task's final runs may be on seeds of their own)
    """
    return np.array([[per_task[env_id][seed] for seed in sorted(per_task[env_id])[:n_runs]] for env_id in tasks]).T


def plot_profile(matrices: dict[str, np.ndarray], path: Path) -> None:
    """The performance profile of each setting: the share of runs whose normalised final score exceeds tau."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from rliable import library as rly
    from rliable import plot_utils

    tau = np.linspace(0.0, 2.0, 81)
    with _fixed_bootstrap_seed():
        profiles, intervals = rly.create_performance_profile(matrices, tau, reps=BOOTSTRAP_REPS)
    figure, axis = plt.subplots(figsize=(6, 3.6))
    plot_utils.plot_performance_profiles(profiles, tau, performance_profile_cis=intervals, ax=axis,
                                         xlabel="PPO-normalised score (τ)", ylabel="share of runs with score > τ")  # fmt: skip
    axis.legend(fontsize=8)
    figure.tight_layout()
    save_png(figure, path, dpi=100)
    plt.close(figure)


def plot_curves(found: dict[tuple[str, str], dict[int, Path]], tasks: list[str], reference: str, path: Path) -> None:
    """Per task, each setting's evaluation return over training: mean over seeds, min to max shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = [task for task in tasks if any(key[0] == task for key in found)]
    columns = min(len(tasks), 5)
    rows = -(-len(tasks) // columns)
    figure, axes = plt.subplots(rows, columns, figsize=(4.5 * columns, 3.6 * rows), squeeze=False)
    for axis, env_id in zip(axes.flat, tasks, strict=False):
        for (task, name), runs in found.items():
            if task != env_id:
                continue
            per_seed = [evaluations(folder) for folder in runs.values()]
            length = min(len(values) for _, values in per_seed)
            steps = per_seed[0][0][:length]
            values = np.array([values[:length] for _, values in per_seed])
            axis.plot(steps, values.mean(axis=0), label=name, linestyle="--" if name == reference else "-")
            axis.fill_between(steps, values.min(axis=0), values.max(axis=0), alpha=0.15)
        axis.set_title(env_id)
        axis.set_xlabel("env steps")
        axis.legend(fontsize=7)
    for axis in axes.flat[len(tasks) :]:
        axis.set_visible(False)
    for row in axes:
        row[0].set_ylabel("evaluation return")
    figure.suptitle("mean over seeds; band: min to max", fontsize=9)
    figure.tight_layout()
    save_png(figure, path, dpi=100)
    plt.close(figure)
