"""
What the comparisons with sb3-contrib's algorithms share (``scripts/small_grids.py contrib`` and ``mask-recurrent``):
each run's footprint in its rows, the cells of their tables, and their grids of one CSV file per run. Runs made before
the footprint recorded the rollout buffer and the peak memory (no ``buffer_mb`` in their rows) get tables without those
columns.
"""

import os
import resource
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from tqdm import tqdm

from sb3_gpg_bench.experiments import PeriodicEvaluation, read_csv, write_csv
from sb3_gpg_bench.grid import run_grid

# The columns that cell_row fills, after the task, the algorithm and the runs (and what a script adds), and their key
COLUMNS = ("final", "last 3", "s / iter", "invalid", "parameters", "buffer MB", "peak MB")


def has_memory(found: list[tuple[tuple[str, str], list[list[dict]]]]) -> bool:
    """:return: whether the runs (``cells``) recorded their rollout buffer and peak memory"""
    return any("buffer_mb" in rows[-1] for _, runs in found for rows in runs)


def table_key(evaluation: str, invalid: str, threads: str = "one torch thread", memory: bool = True) -> str:
    """
    :param evaluation: how the runs are evaluated
    :param invalid: what the *invalid* column counts
    :param threads: how the runs shared the machine
    :param memory: whether the table has the memory columns
    :return: the sentence under a table's title that says what its cells are
    """
    key = (
        f"{evaluation}; mean +- std over training seeds (n). *last 3*: mean of the last three evaluations; *s / iter*: "
        f"training wall time per iteration (rollout and update, {threads}); *invalid*: {invalid}"
    )
    if not memory:
        return key + (". No memory columns: these runs predate the benchmark's recording of the rollout buffer's size "
                      "and the process's peak memory, so their run files hold neither.")  # fmt: skip
    return key + ("; *buffer MB*: the rollout buffer's arrays; *peak MB*: peak resident memory of the run's process "
                  "(python, torch and the envs included), mean over seeds.")  # fmt: skip


def table_head(first_columns: list[str], memory: bool = True) -> list[str]:
    """:return: the header and separator lines of a table of ``first_columns`` then ``COLUMNS`` (less the memory ones)"""
    columns = [*first_columns, *(COLUMNS if memory else COLUMNS[:-2])]
    return ["| " + " | ".join(columns) + " |", "|---" * len(columns) + "|"]


def footprint(model: OnPolicyAlgorithm, buffer_digits: int) -> dict[str, Any]:
    """
    :return: the run's policy parameters, rollout buffer (its arrays, MB) and the peak resident memory of this process
        (MB): a run in a process of its own reports its own peak
    """
    buffer = sum(array.nbytes for array in vars(model.rollout_buffer).values() if isinstance(array, np.ndarray))
    return dict(
        parameters=sum(p.numel() for p in model.policy.parameters()),
        buffer_mb=round(buffer / 2**20, buffer_digits),
        peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    )


def cells(runs_dir: Path, algos: list[str] | tuple[str, ...]) -> list[tuple[tuple[str, str], list[list[dict]]]]:
    """
    :param algos: the order of the algorithms within a task
    :return: per (task, algorithm), by task then ``algos``, the rows of each of its finished runs (CSV files)
    """
    found: dict[tuple[str, str], list[list[dict]]] = {}
    for rows in (read_csv(path) for path in sorted(runs_dir.glob("*.csv"))):
        found.setdefault((rows[0]["env"], rows[0]["algo"]), []).append(rows)
    return sorted(found.items(), key=lambda item: (item[0][0], algos.index(item[0][1])))


def cell_row(runs: list[list[dict]], invalid_key: str, digits: int, buffer_digits: int, memory: bool = True) -> str:
    """
    :param runs: the rows of each run of a cell
    :param invalid_key: the column counting what the runs did wrong in training
    :param digits: the evaluations' decimals
    :return: the table's cells, over the runs: final evaluation and mean of the last three (mean +- std), training
        seconds per iteration, the sum of ``invalid_key``, the policy's parameters, and with ``memory`` the rollout
        buffer and peak memory (MB)
    """
    final = [rows[-1]["eval_mean"] for rows in runs]
    last = [np.mean([row["eval_mean"] for row in rows[-3:]]) for rows in runs]
    per_iteration = np.mean([float(rows[-1]["train_seconds"]) / rows[-1]["iteration"] for rows in runs])
    invalid = sum(int(rows[-1][invalid_key]) for rows in runs)
    text = (
        f"{np.mean(final):.{digits}f} +- {np.std(final):.{digits}f} | {np.mean(last):.{digits}f} +- "
        f"{np.std(last):.{digits}f} | {per_iteration:.3f} | {invalid} | {int(runs[0][-1]['parameters'])}"
    )
    if not memory:
        return text
    buffer, peak = (np.mean([float(rows[-1].get(key, "nan")) for rows in runs]) for key in ("buffer_mb", "peak_rss_mb"))
    return f"{text} | {buffer:.{buffer_digits}f} | {peak:.0f}"


# The per-run grids of contrib and mask-recurrent: one CSV file per run, each trained in a process of its own
def csv_path(out: Path, run: tuple[str, str, int]) -> Path:
    """:return: where the run (env, algorithm, seed) keeps its rows, under ``out/runs``"""
    return out / "runs" / "{}__{}__seed{}.csv".format(*run)


def run_csv_grid(
    runs: list[tuple[str, str, int]], train: Callable[..., list[dict]], out: Path, jobs: int, digits: int
) -> None:
    """
    Train the runs without a CSV file yet, ``jobs`` at a time, one fresh process each (its own peak memory).

    :param runs: (env, algorithm, seed) of each run
    :param train: ``train(*run)``: the run's rows, its evaluations
    :param out: the grid's folder
    :param jobs: runs at once
    :param digits: the decimals of the final evaluation printed as each run ends
    """
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    def keep(run: tuple[str, str, int], rows: list[dict]) -> None:
        write_csv(csv_path(out, run), rows)
        tqdm.write(f"{run[0]} {run[1]} seed {run[2]}: final {rows[-1]['eval_mean']:.{digits}f}")

    run_grid(runs, train, keep, lambda run: csv_path(out, run).exists(), jobs, "spawn")


def evaluated_training(
    model: OnPolicyAlgorithm, evaluation: PeriodicEvaluation, iterations: int, callbacks: list | None = None
) -> list[dict]:
    """
    Train in one ``learn()`` call, evaluating after every ``eval_every`` iterations and after the last.

    :param model: the model, built with its env
    :param evaluation: its evaluation callback
    :param iterations: rollouts to train for
    :param callbacks: more callbacks for ``learn()``
    :return: the evaluation's rows
    """
    model.learn(iterations * model.n_steps * model.n_envs, callback=[evaluation, *(callbacks or [])])
    evaluation.evaluate()  # the last iteration's: no rollout starts after it
    return evaluation.rows


def results_table(
    out: Path,
    algos: list[str] | tuple[str, ...],
    first: list[str],
    cell: Callable[[str, str, list[list[dict]]], tuple[str, tuple[str, int, int]]],
    key: dict,
) -> tuple:
    """
    :param cell: per (task, algorithm) and its runs, the row's cells before ``cell_row``'s, and ``cell_row``'s arguments
    :param key: ``table_key``'s arguments
    :return: the key and table lines of the runs in ``out/runs``, and the runs found (``cells``)
    """
    found = cells(out / "runs", algos)
    memory = has_memory(found)
    lines = [table_key(**key, memory=memory), "", *table_head(first, memory)]
    for (task, algo), runs in found:
        prefix, arguments = cell(task, algo, runs)
        lines.append(f"| {prefix} | {cell_row(runs, *arguments, memory=memory)} |")
    return lines, found
