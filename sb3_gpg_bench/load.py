"""
What a run's wall time was measured under: the machine's load average and how many other trainings ran beside it,
sampled through the run, and when each of its evaluations was written. ``sb3_gpg_bench.suite`` keeps them in each run's
``meta.json``; ``sb3_gpg_bench.suite_timing`` reads them.
"""

import os
import subprocess
import time
import zipfile
from pathlib import Path
from typing import Any

# A process whose command line holds one of these is a training (RL Zoo's, as the suite runs them, or the CLI's)
TRAINING_MARKERS = ("sb3_gpg.train", "rl_zoo3.train", "sb3-gpg train", "sb3_gpg/train.py", "rl_zoo3/train.py")
# Seconds between two samples of the load; evaluation files are looked at every POLL_S
SAMPLE_EVERY_S = 15.0
POLL_S = 1.0


def _command_line(pid: str) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")


def _parent(pid: str) -> str:
    # /proc/<pid>/stat: "pid (name) state ppid ...", and the name may hold spaces or parentheses
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]


def trainings_beside(own: int) -> int | None:
    """
    :param own: the process id of the run itself, not counted
    :return: the trainings running on this machine (a process that is the child of a training is part of it, not one
        more), or None where there is no ``/proc`` to read
    """
    if not Path("/proc/self/cmdline").exists():
        return None
    trainings = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if any(marker in _command_line(entry.name) for marker in TRAINING_MARKERS):
                trainings[entry.name] = _parent(entry.name)
        except OSError:  # gone since listed
            continue
    return sum(pid != str(own) and parent not in trainings for pid, parent in trainings.items())


def run_watched(command: list[str], evaluations: Path) -> tuple[subprocess.CompletedProcess, dict[str, Any], list[float]]:
    """
    Run ``command`` to its end, sampling the machine's load and the trainings beside it, and noting when each evaluation
    is written.

    :param evaluations: the folder under which the run writes its ``evaluations.npz`` (in a subfolder of its own)
    :return: the finished process (with its output), the load record of ``meta.json`` and the seconds from the start at
        which each evaluation was written (where two came between two looks, both get the second's time)
    """
    start, started = time.perf_counter(), time.time()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    record: dict[str, Any] = {"start": list(os.getloadavg()), "every_s": SAMPLE_EVERY_S, "cpus": os.cpu_count(),
                              "sample_fields": ["seconds", "load_1min", "trainings_beside"]}  # fmt: skip
    samples: list[list[float | int | None]] = []
    written: list[float] = []
    next_sample = 0.0
    while True:
        elapsed = time.perf_counter() - start
        if elapsed >= next_sample:
            samples.append([round(elapsed, 1), round(os.getloadavg()[0], 2), trainings_beside(process.pid)])
            next_sample += SAMPLE_EVERY_S
        _note_evaluations(evaluations, started, written)
        try:
            stdout, stderr = process.communicate(timeout=POLL_S)
            break
        except subprocess.TimeoutExpired:  # the output so far is kept for the next call
            continue
    _note_evaluations(evaluations, started, written)
    beside = [sample[2] for sample in samples if sample[2] is not None]
    record.update(end=list(os.getloadavg()), samples=samples, runs_beside_max=max(beside) if beside else None)
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr), record, written


def _note_evaluations(folder: Path, started: float, written: list[float]) -> None:
    """Append to ``written`` the time (seconds after ``started``) of the evaluations written since the last look."""
    import numpy as np

    for path in folder.glob("*/evaluations.npz"):
        try:
            mtime = path.stat().st_mtime
            count = len(np.load(path)["timesteps"])
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):  # caught while being written: next look
            continue
        written.extend([round(mtime - started, 1)] * (count - len(written)))
