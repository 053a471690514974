"""
Which final runs a suite's report counts, and the earlier ones it discloses beside them (``finals.json`` in the
suite's folder). Without the file every finished run counts. With it, a (task, setting) it names counts only the runs
of its ``seeds``, and each of its ``earlier`` sets (runs of the same folder or of another one, such as ``superseded``)
is shown beside the headline with why it was replaced, and the first (the oldest: ``earlier`` lists them in the order
they ran) is counted instead of the current ones in a second aggregate::

    {"LunarLander-v3": {"gpg": {
        "seeds": [10, 11, 12, 13, 14],
        "why": "the entry of <commit>, committed before these seeds ran",
        "earlier": [{"folder": "superseded", "seeds": [0, 1, 2, 3, 4], "why": "the entry before; ..."}]}}}
"""

import json
from pathlib import Path
from typing import Any

from sb3_gpg_bench.suite import Run
from sb3_gpg_bench.suites import Setting

Found = dict[tuple[str, str], dict[int, Path]]


def read_finals(out: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """
    :param out: the suite's folder
    :return: ``finals.json``'s entries per task and setting name ({} where there is no file)
    :raises ValueError: for an entry without its seeds or an earlier set without its reason
    """
    path = out / "finals.json"
    if not path.exists():
        return {}
    finals = json.loads(path.read_text())
    for env_id, per_setting in finals.items():
        for name, entry in per_setting.items():
            if not entry.get("seeds") or not entry.get("why"):
                raise ValueError(f"{path}: {env_id} {name} needs 'seeds' (the runs counted) and 'why'.")
            for earlier in entry.get("earlier", []):
                if not earlier.get("seeds") or not earlier.get("why"):
                    raise ValueError(f"{path}: an earlier set of {env_id} {name} needs 'seeds' and 'why'.")
    return finals


def counted_runs(found: Found, finals: dict[str, dict[str, dict[str, Any]]]) -> Found:
    """
    :param found: per (task, setting name), every finished run's folder by seed
    :return: the runs the report counts: those of ``finals.json``'s seeds where it names the (task, setting), else all
    """
    counted = {}
    for (env_id, name), runs in found.items():
        entry = finals.get(env_id, {}).get(name)
        kept = runs if entry is None else {seed: folder for seed, folder in runs.items() if seed in entry["seeds"]}
        if kept:
            counted[(env_id, name)] = kept
    return counted


def earlier_runs(out: Path, finals: dict[str, dict[str, dict[str, Any]]]) -> list[tuple[str, str, str, dict[int, Path]]]:
    """
    :return: each earlier set as (task, setting name, why, its finished runs' folders by seed)
    """
    sets = []
    for env_id, per_setting in finals.items():
        for name, entry in per_setting.items():
            for earlier in entry.get("earlier", []):
                folder = out / earlier.get("folder", "runs")
                runs = {}
                for seed in earlier["seeds"]:
                    # the setting's algo does not enter the run's name
                    run = folder / Run(env_id, Setting(name, name), seed).name
                    if (run / "meta.json").exists():
                        runs[seed] = run
                sets.append((env_id, name, earlier["why"], runs))
    return sets


def earliest_sets(sets: list[tuple[str, str, str, dict[int, Path]]]) -> Found:
    """
    :return: per (task, setting name) that has earlier sets with finished runs, the first of them (the oldest)
    """
    earliest: Found = {}
    for env_id, name, _, runs in sets:
        if runs:
            earliest.setdefault((env_id, name), runs)
    return earliest


def disclosure(
    finals: dict[str, dict[str, dict[str, Any]]],
    sets: list[tuple[str, str, str, dict[int, Path]]],
    summaries: dict[tuple[str, str], str],
    earliest_summary: str,
) -> str:
    """
    :param summaries: per (task, setting name) and per earlier set (keyed by its reason), the scores in words
    :param earliest_summary: the aggregate counting each task's earliest finals instead ("" where there is none)
    :return: the Markdown that follows the headline: which runs it counts where they are not all of a task's runs, and
        every earlier set with why it was replaced
    """
    if not finals:
        return ""
    lines = ["Final runs replaced or made again (`finals.json`):", ""]
    for env_id, per_setting in finals.items():
        for name, entry in per_setting.items():
            seeds = ", ".join(map(str, entry["seeds"]))
            lines.append(f"- {env_id}, {name.upper()}, counted in the table: seeds {seeds}, {entry['why']}: "
                         f"{summaries.get((env_id, name), 'not run yet')}.")  # fmt: skip
            for set_env, set_name, why, runs in sets:
                if (set_env, set_name) == (env_id, name):
                    seeds = ", ".join(map(str, sorted(runs))) or "none finished"
                    lines.append(f"  - Earlier, seeds {seeds}, {why}: {summaries.get((env_id, why), 'not found')}.")
    if earliest_summary:
        # the same tasks and intervals as the aggregate above it: only the scores differ
        lines += ["", f"Counting each task's earliest final runs instead: {earliest_summary.split(': ', 1)[1]}"]
    return "\n".join(lines) + "\n"
