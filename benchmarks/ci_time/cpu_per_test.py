"""
A pytest plugin: the CPU seconds each test takes, its own process's and all its descendants' (the fork server's
commands, the scripts' workers, the trainings they start), read from /proc before and after the test. CPU time, unlike
a test's duration, hardly changes with what else runs on the machine, so it can be measured beside other work.

    PYTHONPATH=benchmarks/ci_time:. python -m pytest -p cpu_per_test tests -n 1
    python benchmarks/ci_time/cpu_per_test.py cpu_per_test.*.json   # the totals per module and the largest tests

Each worker writes ``cpu_per_test.<pid>.json`` in the working folder: ``[test id, CPU s, wall s]`` per test. Processes
that leave the test's process tree while they run (Ray's daemons) are not counted. Linux only.
"""

import collections
import json
import os
import sys
import time
from pathlib import Path

import pytest

from sb3_gpg_bench.timing import proc_stat

_ROWS: list[tuple[str, float, float]] = []
_TICKS = os.sysconf("SC_CLK_TCK")


def _tree_cpu() -> float:
    """:return: the CPU seconds of this process and its live descendants, with those of the children each has reaped"""
    parents, ticks = {}, {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            fields = proc_stat(name)
        except OSError:  # gone since the listing
            continue
        # state, ppid, ..., utime, stime, cutime, cstime (fields 14-17 of proc(5))
        parents[int(name)], ticks[int(name)] = int(fields[1]), sum(int(value) for value in fields[11:15])
    children = collections.defaultdict(list)
    for pid, parent in parents.items():
        children[parent].append(pid)
    tree, todo = set(), [os.getpid()]
    while todo:
        pid = todo.pop()
        tree.add(pid)
        todo.extend(child for child in children[pid] if child not in tree)
    return sum(ticks.get(pid, 0) for pid in tree) / _TICKS


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    cpu, wall = _tree_cpu(), time.perf_counter()
    try:
        return (yield)
    finally:
        _ROWS.append((item.nodeid, round(_tree_cpu() - cpu, 2), round(time.perf_counter() - wall, 2)))
        Path(f"cpu_per_test.{os.getpid()}.json").write_text(json.dumps(_ROWS))


def summary(paths: list[str], largest: int = 30) -> str:
    rows = [row for path in paths for row in json.loads(Path(path).read_text())]
    modules: collections.Counter = collections.Counter()
    for test, cpu, _ in rows:
        modules[test.split("::")[0]] += cpu
    lines = [f"{len(rows)} tests, {sum(row[1] for row in rows):.0f} CPU s", "", "| module | CPU s |", "|---|---|"]
    lines += [f"| {module} | {cpu:.0f} |" for module, cpu in modules.most_common()]
    lines += ["", "| test | CPU s | wall s |", "|---|---|---|"]
    lines += [f"| {test} | {cpu:.1f} | {wall:.1f} |" for test, cpu, wall in sorted(rows, key=lambda row: -row[1])[:largest]]
    return "\n".join(lines)


if __name__ == "__main__":
    print(summary(sys.argv[1:]))
