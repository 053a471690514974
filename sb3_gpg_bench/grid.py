"""
The resumable grid runner of every benchmark: the runs that have not finished, each trained where the grid says (this
process's threads, a pool of processes, or a Ray cluster), each one's result kept by the caller as it comes in. A
stopped grid resumes where it was, since a kept run counts as finished.
"""

import multiprocessing
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from typing import Any

from tqdm import tqdm

# Where the runs train: "thread" (a run that is a subprocess of its own), "process" (a forked pool), "spawn" (a fresh
# process per run, which then reports its own peak memory)
WORKERS = ("thread", "process", "spawn")


def run_grid(
    runs: Sequence[tuple],
    train: Callable[..., Any],
    keep: Callable[[Any, Any], None],
    finished: Callable[[Any], bool] = lambda run: False,
    jobs: int = 1,
    workers: str = "process",
    ray_address: str | None = None,
    name: Callable[[Any], str] = str,
) -> None:
    """
    Train the runs of the grid that have not finished, ``jobs`` at a time, and keep each one as it finishes. A run
    that fails does not stop the others; the failures are raised together at the end.

    :param runs: the grid, in the order to start the runs; each run is the tuple of ``train``'s arguments
    :param train: trains a run, ``train(*run)``, where the workers run (a module-level function, or a partial of one)
    :param keep: ``keep(run, result)``, in this process: writes what the run leaves, so that ``finished`` then holds
    :param finished: whether a run is done already
    :param jobs: runs at once on this machine (without ``ray_address``)
    :param workers: one of ``WORKERS``
    :param ray_address: a Ray cluster to submit the runs to (``auto``, ``ray://host:10001``; ``local`` starts one
        here), one CPU each; its workers need the same packages installed
    :param name: a run's name in messages
    :raises RuntimeError: naming the runs that failed, with their errors
    """
    if jobs < 1:
        raise ValueError(f"jobs={jobs}: at least one run at a time")
    if workers not in WORKERS:
        raise ValueError(f"Unknown workers {workers!r}: choose one of {', '.join(WORKERS)}.")
    todo = [run for run in runs if not finished(run)]
    where = f"on Ray ({ray_address})" if ray_address else f"{jobs} at a time"
    print(f"{len(runs)} runs, {len(runs) - len(todo)} already done, {len(todo)} to run, {where}", flush=True)
    results = _ray_results(train, todo, ray_address) if ray_address else _pool_results(train, todo, jobs, workers)
    failures = []
    for run, result in tqdm(results, total=len(todo), desc="runs"):
        if isinstance(result, Exception):
            failures.append(f"{name(run)}: {result}")
            tqdm.write(f"{name(run)}: failed")
            continue
        keep(run, result)
    if failures:
        raise RuntimeError(f"{len(failures)} of {len(todo)} runs failed:\n" + "\n".join(failures))


def _pool_results(train: Callable[..., Any], runs: list[tuple], jobs: int, workers: str) -> Iterable[tuple[tuple, Any]]:
    """
    :return: each run with its result (or its error), in the order they finish
    """
    pool: Executor
    if workers == "thread":
        pool = ThreadPoolExecutor(jobs)
    elif workers == "spawn":
        # max_tasks_per_child: Python 3.11 and later, which the benchmarks run on (typeshed's 3.10 lacks it)
        context = multiprocessing.get_context("spawn")
        pool = ProcessPoolExecutor(jobs, mp_context=context, max_tasks_per_child=1)  # type: ignore[call-overload]
    else:
        pool = ProcessPoolExecutor(jobs)
    with pool:
        futures = {pool.submit(train, *run): run for run in runs}
        for future in as_completed(futures):
            error = future.exception()
            yield futures[future], error if isinstance(error, Exception) else future.result()


def _call(train: Callable[..., Any], run: tuple) -> Any:
    return train(*run)


def _ray_results(train: Callable[..., Any], runs: list[tuple], address: str) -> Iterable[tuple[tuple, Any]]:
    """
    :param address: ``ray.init``'s address; ``local`` starts a Ray instance on this machine
    :return: each run with its result (or its error), in the order they finish, one Ray task (one CPU) each
    """
    try:
        import ray
    except ImportError:
        raise ImportError("--ray-address needs Ray: pip install 'sb3-gpg[ray]'") from None

    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    remote_call = ray.remote(num_cpus=1, max_retries=0)(_call)
    pending = {remote_call.remote(train, run): run for run in runs}
    while pending:
        (done,), _ = ray.wait(list(pending), num_returns=1)
        run = pending.pop(done)
        try:
            yield run, ray.get(done)
        except ray.exceptions.RayTaskError as error:
            yield run, error
