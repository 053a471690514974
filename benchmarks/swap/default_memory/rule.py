"""The rule of the screens of the memory as the default (benchmarks/swap/README.md): per task, the candidate against
gpg_swap_linear (the larger std over seeds), the collapse-of-both clause, where PPO learns but a setting ends under 0.1 of
PPO, as a markdown table; then both settings' IQM of PPO-normalised scores over all the seeds (the report's aggregate.md
takes as many runs per task as PPO has).

    python benchmarks/swap/default_memory/rule.py benchmarks/swap/default_memory            # seeds 100, 101, 104, 105
    python benchmarks/swap/default_memory/rule.py benchmarks/swap/default_memory 100 101    # the first screen
    # another candidate, on the tasks it has run (or those named in TASKS)
    CANDIDATE=gpg_swap_memory_recency0.8 python benchmarks/swap/default_memory/rule.py benchmarks/swap/default_memory
    TASKS="Hopper-v5 Swimmer-v5" CANDIDATE=gpg_swap_memory python benchmarks/swap/default_memory/rule.py \
        benchmarks/swap/default_memory
"""

import json
import os
import sys
from pathlib import Path

import numpy as np
from rliable import metrics

from sb3_gpg_bench.suite_report import _bootstrap, finished_runs, normalised, scores
from sb3_gpg_bench.suites import SUITES

out = Path(sys.argv[1])
want = set(map(int, sys.argv[2:])) or {100, 101, 104, 105}
a, b = "gpg_swap_linear", os.environ.get("CANDIDATE", "gpg_swap_memory_recency0.5")
random = json.loads((out / "random_scores.json").read_text())
# the tasks the candidate has run, or those of them named in TASKS
tasks = sorted({p.name.split("__")[0] for p in (out / "runs").iterdir() if p.name.split("__")[1] == b})
tasks = [t for t in tasks if t in os.environ.get("TASKS", t).split()]
# the two settings' runs of the seeds asked for only (others are not read), and every PPO run: the normalisation
found = finished_runs(SUITES["swap"], out, tasks, settings=[a, b], seeds=sorted(want))
found |= finished_runs(SUITES["swap"], out, tasks, settings=["ppo"])
scored = {key: scores(runs) for key, runs in found.items()}
# per metric (final, last five), setting and task: each seed's score normalised by PPO's mean, as the report does
norm, left_out = zip(*(normalised(SUITES["swap"], out, tasks, scored, metric) for metric in (0, 1)), strict=True)
if any(left_out):
    sys.exit(f"PPO's mean is not above the random policy's on {sorted(set(left_out[0]) | set(left_out[1]))}: no scale")
behind: list[str] = []
under: dict[str, list[str]] = {a: [], b: []}
rows = [
    "| task | PPO (seeds 100-101) | linear baseline (default) | candidate | difference | larger std | verdict |",
    "|---|---|---|---|---|---|---|",
]
counts: dict[str, int] = {}
for t in tasks:
    row = {n: scored[(t, n)][0] for n in ("ppo", a, b) if (t, n) in scored}
    seeds = sorted(set(row[a]) & set(row[b]) & want)
    if seeds != sorted(want):
        sys.exit(f"{t}: the rule needs seeds {sorted(want)} of both settings; {a} has {sorted(row[a])}, {b} {sorted(row[b])}")
    x, y = np.array([row[a][s] for s in seeds]), np.array([row[b][s] for s in seeds])
    spread, diff = max(x.std(), y.std()), y.mean() - x.mean()
    lo, hi = random[t]["mean"] - random[t]["std"], random[t]["mean"] + random[t]["std"]
    collapse = all(lo <= v <= hi for v in (*x, *y))
    flag = "behind" if diff < -spread else ("ahead" if diff > spread else "level")
    if flag == "behind" and collapse:
        flag = "behind, both collapsed (not a loss)"
    elif flag == "behind":
        behind.append(t)
    counts[flag] = counts.get(flag, 0) + 1
    ppo = np.array(list(row["ppo"].values()))
    learns = ppo.mean() > hi
    if learns:
        for n in (a, b):
            r = float(np.mean([norm[0][n][t][s] for s in seeds]))
            if r < 0.1:
                under[n].append(f"{t} ({r:.2f})")
    cells = " | ".join(f"{v.mean():.1f} ± {v.std():.1f}" for v in (ppo, x, y))
    note = "" if learns else " (PPO inside random play spread)"
    rows.append(f"| {t} | {cells} | {diff:+.1f} | {spread:.1f} | {flag}{note} |")
    print(f"{t:26s} linear {x.round(1)} memory {y.round(1)} -> {flag}")
print("\n".join(rows))
print("counts:", counts)
print("behind beyond the spread:", behind or "none")
print("under 0.1 of PPO where PPO learns:", under)
# stage 1's tie-break between candidates: the mean normalised final score over the tasks and seeds
means = {n: round(float(np.mean([norm[0][n][t][k] for t in tasks for k in sorted(want)])), 3) for n in (a, b)}
print("mean normalised final score:", means)
# the report's seeded stratified bootstrap, on every seed of both settings
for metric in (0, 1):
    m = {n: np.array([[norm[metric][n][t][k] for k in sorted(want)] for t in tasks]).T for n in (a, b)}
    point, ci = _bootstrap(m, lambda x: np.array([metrics.aggregate_iqm(x)]))
    print(["final", "last five"][metric], {n: (round(float(point[n][0]), 2), np.round(ci[n][:, 0], 2).tolist()) for n in m})
