"""
The suite's wall times as a skeptical reader takes them. While a run trains, ``run_watched`` samples the machine's load
average and how many other trainings run beside it, and notes when each evaluation is written (``meta.json``: ``load``,
``evaluation_wall_s``). The report (``timing``: ``timing.md``, ``time_to_score.png``) compares a wall time only between
runs made under the same load condition (the most trainings beside a run, and no other load: a test run or a profile
beside it puts a run out of every comparison, as pausing it does), beside each run's minibatch updates and
policy parameters, and gives the wall time and env steps each setting needs to first reach 50% and 90% of PPO's final
score. Runs made before either record are reported as unknown, never estimated.
"""

import inspect
import json
import math
import os
import subprocess
import time
import zipfile
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from sb3_gpg_bench.figures import save_png

# A process whose command line holds one of these is a training (RL Zoo's, as the suite runs them, or the CLI's)
TRAINING_MARKERS = ("sb3_gpg.train", "rl_zoo3.train", "sb3-gpg train", "sb3_gpg/train.py", "rl_zoo3/train.py",
                    "sb3_gpg_bench.resumable")  # fmt: skip
SAMPLE_EVERY_S = 15.0  # seconds between two samples of the load
LOOK_EVERY_S = 1.0  # seconds between two looks for new evaluations
FRACTIONS = (0.5, 0.9)
# A run's other load: the machine's 1-min load average less the run and the trainings beside it, its mean over the
# samples after the average's first minute (it lags). Above OTHER_LOAD something else shared the cores (a test run, a
# profile), and the run's wall time is compared with none
LOAD_LAG_S = 60.0
OTHER_LOAD = 0.75
Found = dict[tuple[str, str], dict[int, Path]]  # per (task, setting name), the finished runs' folders by seed
Curves = dict[tuple[str, str], list[tuple[np.ndarray, np.ndarray]]]


def proc_stat(pid: str) -> list[str]:
    """
    :param pid: a process id, as ``/proc`` names it
    :return: the fields of its ``/proc/<pid>/stat`` after its name (state, ppid, ...: fields 3 on of proc(5)); the name
        may hold spaces or parentheses, so the fields start after the last ")"
    :raises OSError: where the process is gone, or ``/proc`` has no such entry
    """
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def trainings_beside(own: int) -> int | None:
    """
    :param own: the process id of the run itself, not counted
    :return: the trainings running on this machine (a process that is the child of a training is part of it, not one
        more), or None where there is no ``/proc`` to read
    """
    if not Path("/proc/self/cmdline").exists():
        return None
    parents = {}
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if entry.name.isdigit() and any(marker in command for marker in TRAINING_MARKERS):
                parents[entry.name] = proc_stat(entry.name)[1]
        except OSError:  # gone since listed, or not a process
            continue
    return sum(pid != str(own) and parent not in parents for pid, parent in parents.items())


def run_watched(
    command: list[str], evaluations: Path, before: float = 0.0, written: list[float] | None = None
) -> tuple[subprocess.CompletedProcess, dict[str, Any], list[float]]:
    """
    Run ``command`` to its end, sampling the machine's load and the trainings beside it, and noting when each evaluation
    is written.

    :param evaluations: the folder under which the run writes its ``evaluations.npz`` (in a subfolder of its own)
    :param before: for a paused run that goes on, the seconds it ran before, from which this part's seconds count
    :param written: the times of the evaluations written before (those the file already holds)
    :return: the finished process (with its output), the load record of ``meta.json`` and the seconds from the start at
        which each evaluation was written (where two came between two looks, both get the second's time)
    """
    written = [] if written is None else list(written)
    start, started = time.perf_counter(), time.time() - before
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    record: dict[str, Any] = {"start": list(os.getloadavg()), "every_s": SAMPLE_EVERY_S, "cpus": os.cpu_count(),
                              "sample_fields": ["seconds", "load_1min", "trainings_beside"]}  # fmt: skip
    samples: list[list[float | int | None]] = []
    while True:
        elapsed = time.perf_counter() - start
        if elapsed >= len(samples) * SAMPLE_EVERY_S:
            samples.append([round(before + elapsed, 1), round(os.getloadavg()[0], 2), trainings_beside(process.pid)])
        _note_evaluations(evaluations, started, written)
        try:
            stdout, stderr = process.communicate(timeout=LOOK_EVERY_S)
            break
        except subprocess.TimeoutExpired:  # the output so far is kept for the next call
            continue
    _note_evaluations(evaluations, started, written)
    beside = [sample[2] for sample in samples if sample[2] is not None]
    record.update(end=list(os.getloadavg()), samples=samples, runs_beside_max=max(beside) if beside else None)
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr), record, written


def _note_evaluations(folder: Path, started: float, written: list[float]) -> None:
    """Append to ``written`` the time (seconds after ``started``) of the evaluations written since the last look."""
    for path in folder.glob("*/evaluations.npz"):
        try:
            mtime = path.stat().st_mtime
            count = len(np.load(path)["timesteps"])
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):  # caught while being written: next look
            continue
        written.extend([round(mtime - started, 1)] * (count - len(written)))


def meta(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "meta.json").read_text())


def beside(folder: Path) -> int | None:
    """:return: the most other trainings that ran beside the run (its load condition), or None where unrecorded"""
    return meta(folder).get("load", {}).get("runs_beside_max")


def other_load(folder: Path) -> float | None:
    """:return: the run's other load (``OTHER_LOAD``), or None where unrecorded or shorter than the average's lag"""
    known = [(sample[0], sample[1] - 1 - sample[2]) for sample in meta(folder).get("load", {}).get("samples", [])
             if sample[2] is not None]  # fmt: skip
    settled = [extra for seconds, extra in known if seconds >= LOAD_LAG_S]
    return float(np.mean(settled)) if settled else None


def resumed(folder: Path) -> int:
    """:return: how often the run paused and went on (``sb3_gpg_bench.resumable``), each time on a machine as it then was"""
    return max(len(meta(folder).get("segments", [])) - 1, 0)


def condition(folder: Path) -> int | None:
    """
    :return: the run's load condition (the most trainings beside it), or None where unrecorded, under other load or
        resumed
    """
    extra = other_load(folder)
    return None if (extra is not None and extra > OTHER_LOAD) or resumed(folder) else beside(folder)


def comparable(folder: Path, shared: int | None) -> bool:
    """:return: whether the run was made under ``shared``, its task's shared load condition (None: the task has none)"""
    return shared is not None and condition(folder) == shared


def _condition(folder: Path) -> str:
    count, extra = beside(folder), other_load(folder)
    text = "not recorded" if count is None else "alone" if count == 0 else f"{count} beside"
    text += f", other load {extra:+.1f}" if extra is not None and extra > OTHER_LOAD else ""
    parts = resumed(folder)
    return text + (f", resumed {parts}x" if parts else "")


def shared_conditions(found: Found, tasks: list[str]) -> dict[str, int | None]:
    """:return: per task, the fewest trainings beside under which every setting run on it has runs, or None"""
    shared = {}
    for env_id in tasks:
        per_setting = [{count for folder in runs.values() if (count := condition(folder)) is not None}
                       for (task, _), runs in found.items() if task == env_id]  # fmt: skip
        shared[env_id] = min(set.intersection(*per_setting), default=None) if per_setting else None
    return shared


def wall_times(found: Found, tasks: list[str]) -> dict[tuple[str, str], float | None]:
    """:return: per (task, setting), the mean wall time (min) of its runs under the task's shared condition, or None"""
    shared = shared_conditions(found, tasks)
    result = {}
    for (env_id, name), runs in found.items():
        kept = [meta(folder)["wall_time_s"] / 60 for folder in runs.values()
                if comparable(folder, shared.get(env_id))]  # fmt: skip
        result[(env_id, name)] = float(np.mean(kept)) if kept else None
    return result


def wall_time_note(found: Found) -> str:
    """:return: what the wall-time columns hold, and where they hold nothing"""
    if all(beside(folder) is None for runs in found.values() for folder in runs.values()):
        return (
            "Wall time: '-' throughout: these runs were made before each run recorded the machine's load (`load` in its "
            "meta.json), so no pair of runs is known to have shared the machine alike; timing.md lists each run's wall "
            "time as measured, with its minibatch updates and parameters."
        )
    return (
        "Wall time: mean per run over the runs made under the task's shared load condition (timing.md: alone, or at "
        "most N other trainings beside, and no other load), the same for every setting; '-': no condition that every "
        "setting has runs under."
    )


@cache
def _algorithm(algo: str) -> type:
    from rl_zoo3.utils import ALGOS

    from sb3_gpg.zoo.registry import GPG_ALGOS

    return GPG_ALGOS[algo][0] if algo in GPG_ALGOS else ALGOS[algo]


def _config(folder: Path) -> dict[str, Any] | None:
    path = folder / "config.yml"
    return dict(yaml.load(path.read_text(), Loader=yaml.UnsafeLoader)) if path.exists() else None  # an OrderedDict


def minibatch_updates(algo: str, folder: Path) -> int | None:
    """
    :return: the run's gradient steps, n_epochs * rollouts * minibatches per rollout (the algorithm's defaults where
        its entry sets none; PPO's ``target_kl`` may stop epochs early), or None without its ``config.yml``
    """
    if (config := _config(folder)) is None:
        return None
    defaults = inspect.signature(_algorithm(algo)).parameters
    n_steps, batch_size, n_epochs = (config.get(key, defaults[key].default) for key in ("n_steps", "batch_size", "n_epochs"))
    rollout = n_steps * config.get("n_envs", 1)
    return n_epochs * math.ceil(meta(folder)["n_timesteps"] / rollout) * math.ceil(rollout / batch_size)


def parameters(algo: str, env_id: str, folder: Path) -> int | None:
    """:return: the parameters of the run's policy, built as its entry builds it, or None without its ``config.yml``"""
    config = _config(folder)
    return None if config is None else _parameters(algo, env_id, config.get("policy_kwargs"), config.get("use_sde", False))


@cache
def _parameters(algo: str, env_id: str, policy_kwargs: str | None, use_sde: bool) -> int:
    import gymnasium as gym
    import rl_zoo3.import_envs  # noqa: F401 (registers RL Zoo's envs)
    import torch as th

    kwargs = eval(policy_kwargs, {"nn": th.nn}) if policy_kwargs else {}  # as rl_zoo3 reads it
    model = _algorithm(algo)("MlpPolicy", gym.make(env_id), policy_kwargs=kwargs, use_sde=use_sde, device="cpu")
    return sum(parameter.numel() for parameter in model.policy.parameters())


def evaluations(folder: Path) -> tuple[np.ndarray, np.ndarray]:
    """
    :param folder: a finished run's folder
    :return: the steps and mean returns of the run's evaluations within its budget (``meta.json``'s ``n_timesteps``):
        a run whose last rollout ends past the budget is evaluated there too, where a run of the other algorithm
        never gets, so every score is read at or before the budget
    """
    data = np.load(folder / "evaluations.npz")
    within = data["timesteps"] <= meta(folder)["n_timesteps"]
    return data["timesteps"][within], data["results"].mean(axis=1)[within]


def _returns(folder: Path) -> np.ndarray:
    return evaluations(folder)[1]


def first_reach(folder: Path, threshold: float) -> tuple[int | None, float | None]:
    """
    :return: the env steps and the wall time (s, where recorded) of the run's first evaluation at or above
        ``threshold``, within its budget; None for both where none is
    """
    steps, means = evaluations(folder)
    reached = np.flatnonzero(means >= threshold)
    if len(reached) == 0:
        return None, None
    times, index = meta(folder).get("evaluation_wall_s"), int(reached[0])
    # the wall times are those of every evaluation written, in order: the first ones are those within the budget
    return int(steps[index]), times[index] if times and len(times) >= len(means) else None


def _mean(values: list) -> float | None:
    known = [value for value in values if value is not None]
    return float(np.mean(known)) if known else None


def _cell(value: float | None, form: str) -> str:
    return "?" if value is None else format(value, form)


def timing(
    out: Path, tasks: list[str], found: Found, algos: dict[str, str], ppo_finals: dict[str, float], floors: dict[str, float]
) -> str:
    """
    Write ``timing.md`` (and ``time_to_score.png`` where runs recorded their evaluations' times).

    :param algos: each setting's algorithm, by setting name
    :param ppo_finals: per task, PPO's mean final evaluation
    :param floors: per task, the score that counts as 0% (the random policy's; 0 where not measured)
    :return: the text
    """
    shared = shared_conditions(found, tasks)
    columns = ["task", "setting", "seed", "wall time (min)", "load condition", "mean load (1 min)", "minibatch updates",
               "parameters"]  # fmt: skip
    lines = ["# Wall time, updates and time to score", "", "## Each run", "", "| " + " | ".join(columns) + " |",
             "|---" * len(columns) + "|"]  # fmt: skip
    updates: dict[tuple[str, str], float | None] = {}
    params: dict[tuple[str, str], int | None] = {}
    for (env_id, name), runs in found.items():
        counts = {seed: minibatch_updates(algos[name], folder) for seed, folder in runs.items()}
        updates[(env_id, name)] = _mean(list(counts.values()))
        params[(env_id, name)] = parameters(algos[name], env_id, next(iter(runs.values())))
        for seed, folder in sorted(runs.items()):
            record = meta(folder)
            samples = record.get("load", {}).get("samples")
            mean_load = _mean([sample[1] for sample in samples]) if samples else None
            cells = [f"{record['wall_time_s'] / 60:.1f}", _condition(folder), _cell(mean_load, ".2f"),
                     _cell(counts[seed], "d"), _cell(params[(env_id, name)], "d")]  # fmt: skip
            lines.append(f"| {env_id} | {name} | {seed} | " + " | ".join(cells) + " |")
    lines += ["", "Minibatch updates: n_epochs x rollouts x minibatches per rollout, from the run's entry and budget (PPO's "
              "target_kl may end epochs early). Load condition: the most other trainings running beside the run when "
              f"sampled (every {SAMPLE_EVERY_S:.0f} s); 'not recorded' for runs made before the record; 'other load': the "
              "1-min load average, less the run and the trainings beside it, was above "
              f"{OTHER_LOAD} on average after its first minute (a test run or a profile beside it): its wall time is "
              "compared with none.", ""]  # fmt: skip
    score_lines, curves = _time_to_score(found, ppo_finals, floors, shared)
    lines += score_lines
    if any(curves.values()):
        _plot(curves, ppo_finals, floors, out / "time_to_score.png")
        lines += [
            "time_to_score.png: each run's evaluations against its wall time (the runs that recorded them, made under "
            "the task's shared load condition).",
            "",
        ]
    else:
        (out / "time_to_score.png").unlink(missing_ok=True)  # an earlier report's, of other runs
        lines += [
            "No run recorded its evaluations' wall times under its task's shared load condition: no plot of score "
            "against wall time.",
            "",
        ]
    lines += _updates_statements(tasks, found, updates, params, wall_times(found, tasks))
    text = "\n".join(lines) + "\n"
    (out / "timing.md").write_text(text)
    return text


def _time_to_score(
    found: Found, ppo_finals: dict[str, float], floors: dict[str, float], shared: dict[str, int | None]
) -> tuple[list[str], Curves]:
    """:return: the time-to-score table's lines, and per (task, setting) each timed run's evaluations by wall time (min)"""
    lines = ["## Time to score", "",
             "The first evaluation at or above 50% and 90% of PPO's final score, (score - floor) / (PPO's mean final "
             "score - floor) with the random policy's score as the floor: env steps, mean over the runs that reach it "
             "(how many of all), and wall time (min) over those made under the task's shared load condition; '?': no "
             "such run recorded its evaluations' times; '-': none reached it.", "",
             "| task | setting | " + " | ".join(f"{f:.0%}: env steps | {f:.0%}: wall time (min)" for f in FRACTIONS) + " |",
             "|---|---|" + "---|---|" * len(FRACTIONS)]  # fmt: skip
    curves: Curves = {}
    for (env_id, name), runs in found.items():
        if env_id not in ppo_finals or ppo_finals[env_id] <= floors[env_id]:
            continue
        cells = []
        for fraction in FRACTIONS:
            threshold = floors[env_id] + fraction * (ppo_finals[env_id] - floors[env_id])
            reached = {seed: first_reach(folder, threshold) for seed, folder in runs.items()}
            steps = [value[0] for value in reached.values() if value[0] is not None]
            seconds = [reached[seed][1] for seed, folder in runs.items() if comparable(folder, shared[env_id])]
            minutes = _mean([None if value is None else value / 60 for value in seconds])
            reach = f"{_mean(steps):,.0f}" if steps else "never"
            cells.append(f"{reach} ({len(steps)}/{len(runs)}) | {_cell(minutes, '.1f') if steps else '-'}")
        lines.append(f"| {env_id} | {name} | " + " | ".join(cells) + " |")
        timed = {seed: meta(folder).get("evaluation_wall_s") for seed, folder in runs.items()
                 if comparable(folder, shared[env_id])}  # fmt: skip
        returns = {seed: _returns(folder) for seed, folder in runs.items()}
        curves[(env_id, name)] = [
            (np.array(times[: len(returns[seed])]) / 60, returns[seed]) for seed, times in timed.items() if times
        ]
    return [*lines, ""], curves


def _updates_statements(
    tasks: list[str],
    found: Found,
    updates: dict[tuple[str, str], float | None],
    params: dict[tuple[str, str], int | None],
    wall: dict[tuple[str, str], float | None],
) -> list[str]:
    """:return: per task and setting other than PPO, its updates and parameters against PPO's, and what its wall time says"""
    lines = ["## Updates against wall time", ""]
    for env_id in tasks:
        ppo = (env_id, "ppo")
        for key in [key for key in found if key[0] == env_id and key[1] != "ppo"]:
            own_updates, ppo_updates, own_wall, ppo_wall = updates.get(key), updates.get(ppo), wall.get(key), wall.get(ppo)
            if own_updates is None or ppo_updates is None:
                continue
            text = f"- {env_id}, {key[1]}: {own_updates / ppo_updates:.2f}x PPO's minibatch updates ({own_updates:,.0f} "
            text += f"against {ppo_updates:,.0f})"
            if params.get(key) and params.get(ppo):
                text += f", {params[key]:,} parameters against {params[ppo]:,}"
            if own_wall is None or ppo_wall is None:
                lines.append(text + "; wall time under the same load unknown.")
                continue
            per_update = (own_wall / own_updates) / (ppo_wall / ppo_updates)
            text += f"; {own_wall / ppo_wall:.2f}x PPO's wall time, {per_update:.2f}x its time per update"
            if own_wall < ppo_wall:
                text += ": faster only because it makes fewer updates." if per_update >= 1 else ": faster per update too."
            lines.append(text + ("" if own_wall < ppo_wall else "."))
    return [*lines, ""]


def _plot(curves: Curves, ppo_finals: dict[str, float], floors: dict[str, float], path: Path) -> None:
    """Per task, each timed run's evaluation return against its wall time, with the 50% and 90% lines of PPO's score."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = list(dict.fromkeys(env_id for (env_id, _), runs in curves.items() if runs))
    columns = min(len(tasks), 5)
    figure, axes = plt.subplots(-(-len(tasks) // columns), columns, figsize=(4.5 * columns, 3.6), squeeze=False)
    for axis, env_id in zip(axes.flat, tasks, strict=False):
        for index, ((_, name), runs) in enumerate(item for item in curves.items() if item[0][0] == env_id):
            for run, (minutes, returns) in enumerate(runs):
                axis.plot(minutes, returns, color=f"C{index}", alpha=0.7, label=name if run == 0 else None)
        for fraction in FRACTIONS:
            axis.axhline(floors[env_id] + fraction * (ppo_finals[env_id] - floors[env_id]), color="0.6", linestyle=":")
        axis.set(title=env_id, xlabel="wall time (min)", ylabel="evaluation return")
        axis.legend(fontsize=7)
    for axis in axes.flat[len(tasks) :]:
        axis.set_visible(False)
    figure.suptitle("each run; dotted: 50% and 90% of PPO's final score", fontsize=9)
    figure.tight_layout()
    save_png(figure, path, dpi=100)
    plt.close(figure)
