"""How much tuning each RL Zoo suite task's ``gpg.yml`` entry got, counted from the committed evidence.

Two kinds of tuning, both on tuning seeds (100 and above): Optuna trials (the MuJoCo search's journals,
``benchmarks/mujoco_search/*.log.gz``, and the 40-trial studies kept as CSV in ``benchmarks/zoo_suite/tuning/optuna``),
and screens: candidate settings trained at the task's full budget, one folder per run named
``<task>__<setting>__seed<N>`` (``SCREEN_DIRS``). A screened candidate is a setting other than the reference runs
``gpg`` (the entry of the time) and ``ppo``. ``benchmarks/zoo_suite/README.md``'s "Tuning effort" table is
``effort_table()``, and a test keeps it so. PPO's entries are rl_zoo3's published ``ppo.yml``: none was tuned here.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from sb3_gpg_bench.journal import journal_storage
from sb3_gpg_bench.suites import ZOO_TASKS

ROOT = Path(__file__).resolve().parents[1]
SCREEN_DIRS = (
    "benchmarks/zoo_suite/tuning/runs",
    "benchmarks/zoo_suite/tuning/memory_screen/runs",
    "benchmarks/mujoco_search/confirm/runs",
    "benchmarks/state_aware/runs",
)
REFERENCES = ("gpg", "ppo")
STATES = ("COMPLETE", "PRUNED", "FAIL")
# Each task's Optuna studies: JournalStorage files (every study in them) and the CSV exports of rl_zoo3's -optimize
STUDIES = {
    "Pendulum-v1": ["benchmarks/zoo_suite/tuning/optuna/gpg/pendulum_v1_40_trials.csv"],
    "MountainCarContinuous-v0": ["benchmarks/zoo_suite/tuning/optuna/gpg/mountaincarcontinuous_v0_40_trials.csv"],
    "HalfCheetah-v5": ["benchmarks/mujoco_search/halfcheetah_v5.log.gz"],
    "Walker2d-v5": ["benchmarks/mujoco_search/walker2d_v5.log.gz"],
    "Swimmer-v5": ["benchmarks/mujoco_search/swimmer_v5.log.gz"],
}
# Screened candidates that the READMEs report but whose runs were not committed: task -> (candidates, runs, what)
TEXT_ONLY = {
    "Walker2d-v5": (1, 1, "`gpg_walker2d_hc_trial26`, seed 100, stopped at 550k steps (`../mujoco_search/README.md`)"),
}
# Where each entry comes from, in words (the counts beside it are computed)
WHERE_FROM = {
    "CartPole-v1": "RL Zoo's PPO entry, tried first on seed 0 (one run, text only); one-lever and cut-return screens; the "
    "memory screen: a memory of 8 rollouts with 256 Fourier features",
    "Acrobot-v1": "unchanged since tried first on seed 0 (one run, text only); the entry's one run on seed 100",
    "Pendulum-v1": "Optuna's best (seed 100), confirmed on seeds 101-104 against the earlier entry (its tuning for "
    "3e5 steps: text only)",
    "MountainCarContinuous-v0": "Optuna's best (seed 100), confirmed on seeds 101-104 against the starting point",
    "LunarLander-v3": "RL Zoo's PPO entry, tried first on seed 0 and its constant rate chosen there (text only); the "
    "state-aware screen; time bins, then bootstrapped cut returns; the memory screen: a memory of 8 rollouts with 256 "
    "Fourier features",
    "LunarLanderContinuous-v3": "LunarLander-v3's entry; bootstrapped cut returns",
    "HalfCheetah-v5": "tried first on seed 0 (text only); the state-aware screen; two studies, their best trials "
    "confirmed on seeds 100-102 (trials 35 and 88 before and after the fold fix); the second study's trial 26; a memory "
    "screen that kept it",
    "Hopper-v5": "tried first on seed 0 (text only); the state-aware screen's best cell",
    "Walker2d-v5": "Hopper-v5's entry (state-aware screen); two studies and a one-lever screen; bootstrapped cut returns; "
    "the memory screen after the critic diagnosis: a memory of 8 rollouts with 256 Fourier features",
    "Swimmer-v5": "RL Zoo's PPO entry with the linear baseline (seeds 100-101); two studies, their best trials "
    "confirmed on seeds 100-102; the 600k study's trial 50",
}
RUN_NAME = re.compile(r"^(?P<task>[^_]+)__(?P<setting>.+)__seed(?P<seed>\d+)$")


@dataclass
class Effort:
    trials: Counter[str] = field(default_factory=Counter)  # Optuna trials by state
    studies: int = 0
    candidates: set[str] = field(default_factory=set)  # screened settings, the references left out
    runs: int = 0  # runs of those candidates (setting x seed, each folder counted)
    seeds: set[int] = field(default_factory=set)  # tuning seeds of every committed run, references included


def study_trials(path: Path) -> list[Counter[str]]:
    """:return: the trials of each study in ``path`` (a journal, ``*.log`` or ``*.log.gz``; or one study's CSV) by state"""
    if path.suffix == ".csv":
        with path.open(newline="") as f:
            return [Counter(row["state"] for row in csv.DictReader(f))]
    storage = journal_storage(path)
    return [
        Counter(t.state.name for t in storage.get_all_trials(s._study_id, deepcopy=False)) for s in storage.get_all_studies()
    ]


def tuning_effort(root: Path = ROOT) -> dict[str, Effort]:
    """:return: each suite task's Optuna trials and screened candidates, from the committed files under ``root``"""
    effort = {task: Effort() for task in ZOO_TASKS}
    for task, paths in STUDIES.items():
        for path in paths:
            for trials in study_trials(root / path):
                effort[task].trials.update(trials)
                effort[task].studies += 1
    for folder in SCREEN_DIRS:
        for run in sorted((root / folder).iterdir()):
            match = RUN_NAME.match(run.name)
            if not run.is_dir() or match is None or match["task"] not in effort:
                continue
            counted = effort[match["task"]]
            counted.seeds.add(int(match["seed"]))
            if match["setting"] not in REFERENCES:
                counted.candidates.add(match["setting"])
                counted.runs += 1
    return effort


def _seed_ranges(seeds: set[int]) -> str:
    ranges: list[list[int]] = []
    for seed in sorted(seeds):
        if ranges and seed == ranges[-1][-1] + 1:
            ranges[-1][-1] = seed
        else:
            ranges.append([seed, seed])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def totals(effort: dict[str, Effort]) -> tuple[int, int, int]:
    """:return: Optuna trials, screened candidates and their runs over every task (committed runs only)"""
    return (
        sum(e.trials.total() for e in effort.values()),
        sum(len(e.candidates) for e in effort.values()),
        sum(e.runs for e in effort.values()),
    )


def effort_table(effort: dict[str, Effort] | None = None) -> str:
    """:return: the markdown table of ``benchmarks/zoo_suite/README.md``'s "Tuning effort" section"""
    effort = tuning_effort() if effort is None else effort
    lines = [
        "| task | Optuna trials (complete/pruned/failed) | screened candidates (runs) | tuning seeds | where from |",
        "|---|---|---|---|---|",
    ]
    for task, e in effort.items():
        trials = "0"
        if e.studies:
            states = "/".join(str(e.trials[s]) for s in STATES)
            trials = f"{e.trials.total()} ({states}) in {e.studies} {'study' if e.studies == 1 else 'studies'}"
        screened = f"{len(e.candidates)} ({e.runs})"
        where = WHERE_FROM[task]
        if task in TEXT_ONLY:
            n, runs, what = TEXT_ONLY[task]
            screened += f" + {n} ({runs}) text only"
            where += f"; text only: {what}"
        lines.append(f"| {task} | {trials} | {screened} | {_seed_ranges(e.seeds)} | {where} |")
    all_trials, candidates, runs = totals(effort)
    text_only = f" + {sum(n for n, _, _ in TEXT_ONLY.values())} ({sum(r for _, r, _ in TEXT_ONLY.values())}) text only"
    lines.append(f"| all ten | {all_trials} | {candidates} ({runs}){text_only if TEXT_ONLY else ''} | | |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(effort_table())
