"""How often a run's fitted baseline misses its rollout's returns by far: per run folder, the number of rollouts whose
held-out explained variance of the returns (``train/baseline_explained_variance`` in the run's training log) is below
-10, in each half of training, its median and its lowest value.

    python benchmarks/swap/lambda_target/baseline_tail.py benchmarks/swap/lambda_target/runs/HalfCheetah-v5__* \
        benchmarks/swap/sound_default/runs/HalfCheetah-v5__*
"""

import gzip
import json
import sys
from pathlib import Path

import numpy as np

KEYS = ("train/baseline_explained_variance", "gpg/baseline_explained_variance")  # the second: older runs' name
FAR = -10.0


def main() -> None:
    print(f"| run | rollouts | below {FAR:g}, first half | second half | median | lowest |")
    print("|---|---|---|---|---|---|")
    for folder in map(Path, sys.argv[1:]):
        logged = json.loads(gzip.decompress((folder / "training_log.json.gz").read_bytes()))
        values = np.array(next(logged[key] for key in KEYS if key in logged), dtype=float)[:, 1]
        first, second = np.array_split(values, 2)
        print(f"| {folder.name} | {len(values)} | {(first < FAR).sum()} | {(second < FAR).sum()} | "
              f"{np.median(values):.2f} | {values.min():,.0f} |")  # fmt: skip


if __name__ == "__main__":
    main()
