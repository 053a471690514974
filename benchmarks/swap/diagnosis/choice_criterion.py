"""
Why the folds' choice of the pooled candidate (``pooled_memory``) loses the forced pooled level's held-out explained
variance on Ant-v5: scored fold by fold on saved rollouts (``baseline_variants.SavedRollouts``), without training.

The estimator runs as ``--variant`` sets it (by default the pooled candidate of ``gpg_swap_pooled32_auto``) through
``variants_on_saved``; at every fold's choice (``cross_fitting._chosen_fit``) this script also fits every candidate and
size on the fold's whole training set (and the memory, with the estimator's value iterations) and scores it on the
fold's own samples, the returns completed by the fold's completion as the halves' targets are. Per window (the first
``--warm-up`` scored rollouts left out), it reports:

- how many folds could choose (two halves of training trajectories) and how many training trajectories they had;
- how often the halves took the pooled candidate, and how often the fold's own held-out error would have;
- the held-out explained variance of the whole rollout (1 - the folds' summed squared error over the returns' sum of
  squares about their mean) under rules of choice fed the same folds: the halves' (the option's), the own level
  forced (the default's candidate, its size by the halves), the pooled level forced (its size by the halves), the
  halves' with folds that cannot choose taking the pooled level, and the held-out error's own pick (an oracle, not a
  rule: it reads the samples it scores).

The memories hold the choice's rollouts and fits for every rule, so the rules differ only in the fold's last step.
The rollouts are not committed (some 100 MB a run); the table is, with its command.

    python benchmarks/swap/diagnosis/choice_criterion.py --saved /work/saved/ant101 --out choice_criterion/Ant-v5.md
"""

import argparse
import importlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from sb3_gpg.estimator import cross_fitting
from sb3_gpg_bench.baseline_variants import variants_on_saved

HERE = Path(__file__).parent
VARIANT = {"pooled_memory": 32, "pooled_recency": 0.9}
# (the package exports a function of the module's name)
ESTIMATE = importlib.import_module("sb3_gpg.estimator.estimate")
RULES = ("halves", "own", "pooled", "halves_else_pooled", "lagged", "oracle")


class Recorder:
    """Wraps the estimator's estimate and its folds' choice, keeping per rollout what every fold's candidates score."""

    def __init__(self) -> None:
        self.rollouts: list[list[dict[str, Any]]] = []
        self.estimate = ESTIMATE.fitted_estimate
        self.choose = cross_fitting._chosen_fit

    def __enter__(self) -> "Recorder":
        ESTIMATE.fitted_estimate = self._estimate  # type: ignore[assignment]
        cross_fitting._chosen_fit = self._chosen_fit  # type: ignore[assignment]
        return self

    def __exit__(self, *_: object) -> None:
        ESTIMATE.fitted_estimate = self.estimate  # type: ignore[assignment]
        cross_fitting._chosen_fit = self.choose  # type: ignore[assignment]

    def _estimate(self, *args: Any, **kwargs: Any) -> Any:
        self.rollouts.append([])
        return self.estimate(*args, **kwargs)

    def _chosen_fit(self, samples, split, halves, candidates, completion, ridge, choose_size):  # type: ignore[no-untyped-def]
        chosen = self.choose(samples, split, halves, candidates, completion, ridge, choose_size)
        train = split >= 0
        n_features = samples.features.shape[1]
        sizes = sorted({min(size, n_features) for size in (*cross_fitting.CANDIDATE_SIZES, n_features)})
        own = ~train
        targets = cross_fitting._targets(samples, own, completion)
        fold: dict[str, Any] = {
            "chosen": chosen,
            "halves": bool(halves[0].n_samples and halves[1].n_samples),
            "trajectories": _trajectories(samples, train),
            "n_own": int(own.sum()),
            "targets": targets,
            "halves_error": {},
            "held_out": {},
        }
        held_out = [
            (samples.features[rows], cross_fitting._targets(samples, rows, completion)) for rows in (split == 0, split == 1)
        ]
        for number, memory in enumerate(candidates):
            system = memory.plus(halves[0].plus(halves[1]))
            for size in sizes:
                fit = cross_fitting._iterated_fit(system, completion, ridge, size, samples, train)
                fold["held_out"][number, size] = float(np.sum((fit.values(samples.features[own]) - targets) ** 2))
            if fold["halves"]:
                errors = cross_fitting.halves_errors(memory, halves, held_out, completion, ridge, sizes)
                fold["halves_error"] |= {(number, size): error for size, error in zip(sizes, errors, strict=True)}
        self.rollouts[-1].append(fold)
        return chosen


def _trajectories(samples: cross_fitting.Samples, rows: np.ndarray) -> int:
    """:return: the trajectories among the samples ``rows`` (a new one where the env changes or the time does not rise)"""
    times, envs = samples.features[rows, 1], samples.envs[rows]
    return int(len(times) > 0) + int(np.sum((np.diff(times) <= 0) | (np.diff(envs) != 0)))


def _pick(fold: dict[str, Any], rule: str) -> tuple[int, int]:
    """:return: the (candidate, size) that ``rule`` takes in ``fold``"""
    held_out = fold["held_out"]
    if rule == "oracle":
        return min(held_out, key=held_out.get)
    if rule == "halves" or (rule == "own" and not fold["halves"]):
        return fold["chosen"]
    if not fold["halves"]:
        # a fold that cannot choose fits all the features on its memory (``_chosen_fit``): here the pooled one's
        return 1, max(size for _, size in held_out)
    if rule == "halves_else_pooled":
        return fold["chosen"]
    number = 0 if rule == "own" else 1
    scored = {key: error for key, error in fold["halves_error"].items() if key[0] == number}
    return min(scored, key=scored.get)


def _pooled(fold: dict[str, Any]) -> bool:
    """:return: whether the fold had the pooled candidate (a memory)"""
    return any(number == 1 for number, _ in fold["held_out"])


def _error(rollout: list[dict[str, Any]], rule: str) -> float:
    """:return: the rollout's held-out squared error under ``rule``"""
    return sum(fold["held_out"][_pick(fold, rule)] for fold in rollout)


def summary(window: list[list[dict[str, Any]]], logged: list[float], warm_up: int) -> dict[str, float]:
    """
    :param window: a window's rollouts in order
    :param logged: the estimator's own held-out explained variance of each (its returns completed fold by fold)
    :param warm_up: the first rollouts left out
    :return: the window's medians and shares (``RULES``' explained variances, the folds' counts). ``lagged`` takes for
        every fold the candidate (at its halves' size) whose folds predicted the previous rollout's returns best
    """
    explained: dict[str, list[float]] = {rule: [] for rule in RULES}
    lagged_pooled = []
    kept = [index for index in range(warm_up, len(window)) if all(_pooled(fold) for fold in window[index])]
    rollouts = [window[index] for index in kept]
    folds = [fold for rollout in rollouts for fold in rollout]
    for index in kept:
        rollout, previous = window[index], window[index - 1]
        targets = np.concatenate([fold["targets"] for fold in rollout])
        total = float(np.sum((targets - targets.mean()) ** 2))
        pooled_before = all(_pooled(fold) for fold in previous) and _error(previous, "pooled") < _error(previous, "own")
        lagged = "pooled" if pooled_before else "own"
        lagged_pooled.append(pooled_before)
        for rule in RULES:
            explained[rule].append(1 - _error(rollout, lagged if rule == "lagged" else rule) / total)
    choosing = [fold for fold in folds if fold["halves"]]
    prefers_pooled = [
        min(error for (number, _), error in fold["held_out"].items() if number == 1)
        < min(error for (number, _), error in fold["held_out"].items() if number == 0)
        for fold in choosing
    ]
    took_pooled = [fold["chosen"][0] == 1 for fold in choosing]
    return {
        "rollouts": len(rollouts),
        "folds": len(folds),
        "can_choose": len(choosing) / max(len(folds), 1),
        "trajectories_choosing": float(np.mean([fold["trajectories"] for fold in choosing])) if choosing else float("nan"),
        "trajectories_not": float(np.mean([fold["trajectories"] for fold in folds if not fold["halves"]]))
        if len(choosing) < len(folds)
        else float("nan"),
        "halves_pooled": float(np.mean(took_pooled)) if choosing else float("nan"),
        "held_out_pooled": float(np.mean(prefers_pooled)) if choosing else float("nan"),
        "agree": float(np.mean(np.array(took_pooled) == np.array(prefers_pooled))) if choosing else float("nan"),
        "lagged_pooled": float(np.mean(lagged_pooled)),
        "ev_logged": float(np.median([logged[index] for index in kept])),
        **{f"ev_{rule}": float(np.median(values)) for rule, values in explained.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--saved", type=Path, required=True, help="SavedRollouts' folder")
    parser.add_argument("--variant", default=json.dumps(VARIANT), help="baseline_kwargs as JSON")
    parser.add_argument("--warm-up", type=int, default=8, help="scored rollouts left out at each window's start")
    parser.add_argument("--out", type=Path, help="a markdown table, beside this script")
    args = parser.parse_args()
    with Recorder() as recorder:
        series = variants_on_saved(args.saved, {"choice": json.loads(args.variant)})
    # every saved rollout was estimated, a window's first unscored (``variants_on_saved``)
    saved = [int(file.stem.split("_")[1]) for file in sorted(args.saved.glob("rollout_*.npz"))]
    assert len(recorder.rollouts) == len(saved), "one estimate per saved rollout"
    steps = [step for step, _ in series["choice"]]
    scored = [recorder.rollouts[saved.index(step)] for step in steps]
    gaps = np.flatnonzero(np.diff(steps) != np.diff(steps).min()) + 1
    rows = {}
    for window in np.split(np.arange(len(steps)), gaps):
        logged = [series["choice"][index][1] for index in window]
        rows[f"{steps[window[0]]:,}-{steps[window[-1]]:,}"] = summary([scored[i] for i in window], logged, args.warm_up)
    lines = ["| | " + " | ".join(rows) + " |", "|---|" + "---|" * len(rows)]
    for name in next(iter(rows.values())):
        values = [row[name] for row in rows.values()]
        lines.append(
            f"| {name} | " + " | ".join(f"{value:.2f}" if isinstance(value, float) else str(value) for value in values) + " |"
        )
    command = "python benchmarks/swap/diagnosis/choice_criterion.py"
    command += f" --saved {args.saved} --warm-up {args.warm_up} --variant '{args.variant}'"
    text = "\n".join([*lines, "", f"    {command}" + (f" --out {args.out}" if args.out else ""), ""])
    print(text)
    if args.out:
        (HERE / args.out).parent.mkdir(parents=True, exist_ok=True)
        (HERE / args.out).write_text(text)


if __name__ == "__main__":
    main()
