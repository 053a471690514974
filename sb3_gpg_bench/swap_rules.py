"""
The swap suite's adoption rules (benchmarks/swap/*/rule.py): a candidate default against the sound default on the
same seeds, task by task (behind or ahead by more than the larger std over the seeds, else level), and both settings'
IQM of PPO-normalised final evaluations with 95% bootstrap intervals (PPO's seeds 100-101 as the scale).
"""

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from rliable import metrics

from sb3_gpg_bench.suite_report import _bootstrap, evaluations

SWAP = Path(__file__).resolve().parents[1] / "benchmarks" / "swap"
SOUND = SWAP / "sound_default"
# the previous default's runs, with PPO's and random play's scores
PREVIOUS = SWAP / "default_memory"
NEW, OLD = "gpg_swap_sound", "gpg_swap_memory_recency0.8"
SIX_SEEDS = (100, 101, 104, 105, 106, 107)
# The sparse -1-per-step tasks: the score of an episode that never reaches the goal before the time limit
NEVER_THERE = {"MountainCar-v0": -200.0, "Acrobot-v1": -500.0}
# The tasks whose PPO entry leaves gae_lambda unset on Box observations, where the constructor's "auto" trains (on
# FrozenLake-v1's the bins keep 1): its runs, tuning seeds (the rule's) and the finals
AUTO_LAMBDA_TASKS = ("Ant-v5", "Pusher-v5")
AUTO_LAMBDA = "gpg_swap_lambda_auto"
AUTO_LAMBDA_RUNS = ((SWAP / "diagnosis", (100, 101, 104)), (SWAP / "lambda_auto", (110, 111)))
# The tasks where the linear baseline's optimism acts (on by default since its rule, ../optimism_default; elsewhere the
# default trains as before): its runs on the tuning seeds (the rule's, then the fixed option's check) and the finals
OPTIMISM_TASKS = ("Acrobot-v1", "MountainCar-v0", "MountainCarContinuous-v0")
OPTIMISM = "gpg_swap_optimism"
OPTIMISM_TUNING = (SWAP / "optimism_default", SWAP / "diagnosis" / "optimism_fixed")
OPTIMISM_FRESH = SWAP / "optimism_default" / "fresh_seeds"


def final(folder: Path, metric: int) -> float:
    values = evaluations(folder)[1]
    return float(values[-1] if metric == 0 else values[-5:].mean())


def run(root: Path, task: str, setting: str, seed: int) -> Path:
    return root / "runs" / f"{task}__{setting}__seed{seed}"


def found(roots: Sequence[Path], task: str, setting: str, seed: int) -> Path | None:
    """:return: the first of ``roots``' finished runs of the setting on the task and seed; None where none has it"""
    return next((folder for root in roots if ((folder := run(root, task, setting, seed)) / "meta.json").is_file()), None)


def goal_scores(run: Path, floor: float) -> tuple[str, float, float]:
    """
    :param floor: the score of episodes that never reach the goal (``NEVER_THERE``; 0 on MountainCarContinuous-v0)
    :return: the step of the run's first evaluation above ``floor`` (the goal reached; "never" where none is), its
        final evaluation and the mean of its last five
    """
    steps, returns = evaluations(run)
    above = np.flatnonzero(returns > floor)
    return (f"{steps[above[0]]:,}" if len(above) else "never"), float(returns[-1]), float(returns[-5:].mean())


def goal_cell(run: Path, floor: float) -> str:
    """:return: a table cell of ``goal_scores``: "first goal, final, last five", or "(not run)" for an unfinished run"""
    if not (run / "meta.json").is_file():
        return "(not run)"
    return "{}, {:.1f}, {:.1f}".format(*goal_scores(run, floor))


def of_ppo(gpg: float, ppo: float, floor: float) -> float:
    """:return: GPG's score as a fraction of PPO's over random play's ``floor``; NaN where PPO does no better than it"""
    return (gpg - floor) / (ppo - floor) if ppo > floor else float("nan")


def targets_missed(task: str, fraction: float, ppo: np.ndarray, gpg: np.ndarray) -> str:
    """
    :param fraction: GPG's mean as a fraction of PPO's (``of_ppo``)
    :param ppo: PPO's final evaluations, one per seed (``gpg``: GPG's)
    :return: the swap issue's targets the task misses (at least 0.8 of PPO; no run that never reaches the goal where
        every PPO run does), "met" where it misses none
    """
    misses = ["below 0.8 of PPO"] if fraction < 0.8 else []
    never = NEVER_THERE.get(task)
    if never is not None and (gpg <= never).any() and (ppo > never).all():
        misses.append(f"{int((gpg <= never).sum())} run(s) never reach the goal")
    return "; ".join(misses) or "met"


def judge(task: str, difference: float, spread: float, verdicts: dict[str, list[str]]) -> str:
    """The rule's verdict on a task (behind or ahead by more than the spread, else level), recorded in ``verdicts``."""
    verdict = "behind" if difference < -spread else ("ahead" if difference > spread else "level")
    verdicts.setdefault(verdict, []).append(task)
    return verdict


def normalise(normalised: dict[str, list[list[float]]], floor: float, ppo: np.ndarray, scores: dict[str, np.ndarray]) -> None:
    """Append each setting's scores as fractions of PPO's mean over random play's (tasks where PPO beats random)."""
    scale = ppo.mean() - floor
    if scale > 0:
        for name, values in scores.items():
            normalised[name].append(list((values - floor) / scale))


def compare(
    task: str,
    scores: dict[str, np.ndarray],
    floor: float,
    normalised: dict[str, list[list[float]]],
    verdicts: dict[str, list[str]],
) -> list[str]:
    """
    A task's row of a candidate's rule against the sound default on the same seeds.

    :param scores: the sound default's final evaluations, then the candidate's, by setting name
    :param floor: random play's mean score on the task
    :return: the row's cells after the task: PPO's mean (seeds 100-101), each setting's mean ± std, the difference, the
        larger std and the verdict (recorded in ``verdicts``); the scores are appended to ``normalised``
    """
    sound, candidate = scores.values()
    ppo = np.array([final(run(PREVIOUS, task, "ppo", seed), 0) for seed in (100, 101)])
    spread = max(sound.std(), candidate.std())
    difference = candidate.mean() - sound.mean()
    verdict = judge(task, difference, spread, verdicts)
    normalise(normalised, floor, ppo, scores)
    means = [f"{values.mean():.1f} ± {values.std():.1f}" for values in (sound, candidate)]
    return [f"{ppo.mean():.1f}", *means, f"{difference:+.1f}", f"{spread:.1f}", verdict]


def summarise(
    rows: list[str], verdicts: dict[str, list[str]], normalised: dict[str, list[list[float]]], seeds: list[int]
) -> dict[str, float]:
    """
    Print the table, the verdicts and each setting's IQM of PPO-normalised scores with its bootstrap interval.

    :return: each setting's IQM
    """
    print("\n".join(rows))
    print()
    for verdict, names in sorted(verdicts.items()):
        print(f"{verdict}: {len(names)} ({', '.join(names)})")
    arrays = {name: np.array(values) for name, values in normalised.items()}
    points, intervals = _bootstrap(arrays, lambda scores: np.array([metrics.aggregate_iqm(scores)]))
    for name in arrays:
        low, high = intervals[name][:, 0]
        print(f"IQM of PPO-normalised final evaluations, {name}: {points[name][0]:.2f} [{low:.2f}, {high:.2f}]")
    print(f"tasks: {len(next(iter(arrays.values())))} with PPO above random; seeds: {seeds}")
    return {name: float(point[0]) for name, point in points.items()}


def tasks() -> list[str]:
    """:return: the tasks the sound default has runs of"""
    return sorted({p.name.split("__")[0] for p in (SOUND / "runs").iterdir() if p.name.split("__")[1] == NEW})


def candidate_rule(
    roots: Sequence[Path],
    reference: str,
    candidate: str,
    seeds: list[int],
    unchanged: Mapping[str, tuple[Path, str]] | None = None,
    candidate_auto: str | None = None,
) -> None:
    """
    Print a candidate default's 17-task rule against the current default rerun on the same code: per task PPO's mean
    (seeds 100-101, the scale), both settings' means ± std, the difference, the larger std and the verdict; once every
    run is made, both IQMs of PPO-normalised final evaluations with 95% bootstrap intervals and the decision (adopted
    if the candidate's IQM is not lower and no task is behind beyond the spread). Until then, the tasks run on every
    seed so far, with a line for each task already behind (which ends the rule: it cannot pass).

    :param roots: the folders whose ``runs/`` hold the rule's runs, the first that has a run giving it
    :param reference: the current default's setting (``AUTO_LAMBDA`` on ``AUTO_LAMBDA_TASKS``)
    :param candidate: the candidate's setting (its ``_auto`` variant on ``AUTO_LAMBDA_TASKS``)
    :param seeds: the seeds every task's runs are compared on
    :param unchanged: the tasks on which the candidate trains as the reference does, each with the folder and setting
        of the runs that stand for both
    :param candidate_auto: the candidate's setting on ``AUTO_LAMBDA_TASKS`` where it is not ``candidate`` + "_auto"
    """
    random = json.loads((PREVIOUS / "random_scores.json").read_text())
    rows = ["| task | PPO (seeds 100-101) | default, rerun | candidate | difference | spread | verdict |", "|---" * 7 + "|"]
    normalised: dict[str, list[list[float]]] = {reference: [], candidate: []}
    verdicts: dict[str, list[str]] = {}
    missing: dict[str, list[int]] = {}
    for task in tasks():
        names = (AUTO_LAMBDA, candidate_auto or f"{candidate}_auto") if task in AUTO_LAMBDA_TASKS else (reference, candidate)
        task_roots = roots
        if unchanged and task in unchanged:
            root, setting = unchanged[task]
            task_roots, names = [root], (setting, setting)
        folders = {(name, seed): found(task_roots, task, name, seed) for name in names for seed in seeds}
        absent = sorted({seed for (_, seed), folder in folders.items() if folder is None})
        if absent:
            missing[task] = absent
            continue
        paths = {key: folder for key, folder in folders.items() if folder is not None}
        scores = {
            key: np.array([final(paths[name, seed], 0) for seed in seeds])
            for key, name in zip((reference, candidate), names, strict=True)
        }
        cells = compare(task, scores, random[task]["mean"], normalised, verdicts)
        rows.append(f"| {task} | {' | '.join(cells)} |")
    if not missing:
        iqm = summarise(rows, verdicts, normalised, seeds)
        adopted = iqm[candidate] >= iqm[reference] and not verdicts.get("behind")
        print(f"\nthe rule: {'adopted' if adopted else 'not adopted'} (IQM {iqm[candidate]:.3f} against {iqm[reference]:.3f})")
        return
    print("\n".join(rows))
    for task in verdicts.get("behind", []):
        print(f"\n{task} is behind beyond the spread: the rule cannot pass")
    print(f"\nno verdict yet: runs not made of {', '.join(f'{task} {seeds}' for task, seeds in missing.items())}")
