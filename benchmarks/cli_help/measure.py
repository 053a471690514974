"""
How long each command line takes to print its help: ``sb3-gpg --help``, ``sb3-gpg train --help`` and
``python -m sb3_gpg --help``, each run a few times as a new process (wall time, median), with the machine's load at
the time, which a busy machine's numbers need to be read against. With ``--compare REF``, the same commands also run
on the sb3_gpg of a git commit (``git archive``, put first on ``PYTHONPATH``), alternating with the working tree's, so
that both are timed under the same load.

Run from the repository root, in the environment sb3_gpg is installed in:
``python benchmarks/cli_help/measure.py [--repeats 5] [--compare REF] [--out benchmarks/cli_help/results.md]``
"""

import argparse
import io
import os
import platform
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = Path(sys.executable).parent
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],  # the floor: the interpreter starting and stopping
    "sb3-gpg --help": [str(SCRIPTS / "sb3-gpg"), "--help"],
    "sb3-gpg train --help": [str(SCRIPTS / "sb3-gpg"), "train", "--help"],
    "python -m sb3_gpg --help": [sys.executable, "-m", "sb3_gpg", "--help"],
}


# Where the commands run: a folder without sb3_gpg, which python -c and -m would import first
WORKING_FOLDER = tempfile.gettempdir()


def wall_time(command: list[str], environment: dict[str, str]) -> float:
    """
    :param command: the command line, run with its output discarded
    :param environment: its environment variables
    :return: its wall time in seconds
    :raises RuntimeError: where it does not exit 0
    """
    start = time.perf_counter()
    result = subprocess.run(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=environment, cwd=WORKING_FOLDER
    )
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {result.returncode}: {result.stderr[-2000:]}")
    return elapsed


def exported(ref: str, folder: str) -> dict[str, str]:
    """
    :param ref: a git commit
    :param folder: where to write its ``sb3_gpg``
    :return: the environment that imports that ``sb3_gpg`` instead of the installed one
    :raises RuntimeError: where Python imports another ``sb3_gpg`` all the same
    """
    archive = subprocess.run(["git", "archive", ref, "sb3_gpg"], cwd=ROOT, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    environment = {**os.environ, "PYTHONPATH": folder}
    found = subprocess.run(
        [sys.executable, "-c", "import sb3_gpg; print(sb3_gpg.__file__)"],
        env=environment,
        capture_output=True,
        text=True,
        cwd=WORKING_FOLDER,
    ).stdout.strip()
    if not found.startswith(folder):
        raise RuntimeError(f"{ref}'s sb3_gpg is not the one imported: {found}")
    return environment


def commit(ref: str) -> str:
    """:return: the short hash of ``ref``"""
    return subprocess.run(["git", "rev-parse", "--short", ref], cwd=ROOT, capture_output=True, text=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description="Time the command lines' --help.")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each command (default: 5)")
    parser.add_argument("--compare", metavar="REF", help="also time the sb3_gpg of this git commit (e.g. HEAD)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results.md"), help="the Markdown file to write")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        versions = {"this tree": dict(os.environ)}
        if args.compare:
            versions[f"{args.compare} ({commit(args.compare)})"] = exported(args.compare, folder)
        load_before = os.getloadavg()
        for environment in versions.values():  # the first run after an install reads every file from disk
            wall_time(COMMANDS["sb3-gpg train --help"], environment)
        times: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.repeats):  # the versions alternate, so that a change of load falls on both
            for name, command in COMMANDS.items():
                for version, environment in versions.items():
                    times.setdefault((name, version), []).append(wall_time(command, environment))
        load_after = os.getloadavg()

    rows = []
    for (name, version), runs in times.items():
        if name == "python -c pass" and version != "this tree":
            continue
        rows.append(f"| `{name}` | {version} | {statistics.median(runs):.2f} | {min(runs):.2f} | {max(runs):.2f} |")
        print(rows[-1])
    compare = f" --compare {args.compare}" if args.compare else ""
    lines = [
        "# Time to print the help",
        "",
        f"Made by `python benchmarks/cli_help/measure.py --repeats {args.repeats}{compare}` on {platform.platform()}, "
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')}.",
        f"Each command runs as a new process, its output discarded: wall time in seconds over {args.repeats} runs, "
        "after one that reads the files from disk" + (", the two versions alternating." if args.compare else "."),
        f"Load average (1, 5, 15 min) before: {', '.join(f'{x:.2f}' for x in load_before)}; "
        f"after: {', '.join(f'{x:.2f}' for x in load_after)}.",
        "",
        "| command | sb3_gpg | median | min | max |",
        "|---|---|---:|---:|---:|",
        *rows,
        "",
    ]
    Path(args.out).write_text("\n".join(lines))
    print(f"Wrote {args.out}")


if __name__ == "__main__":
    main()
