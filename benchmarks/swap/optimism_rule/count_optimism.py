"""
How often the optimism acts in one run of the swap suite: the run's training (the suite's command, evaluations
included, so that it trains as the suite's run of the same seed) in this process, with the optimism's two tests
counted: the rollouts whose rewards are one cost per step (``optimism.one_cost``) and those whose baselines it raises
(``optimism.novelty``, called only there). README.md, *Runs so far*.

    python benchmarks/swap/optimism_rule/count_optimism.py MountainCarContinuous-v0 gpg_swap_trend_long_folds8_optimism 100
"""

import argparse
import importlib
import runpy
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from sb3_gpg_bench.suite import Run, budget_of, training_arguments
from sb3_gpg_bench.suites import SUITES

# the module (the package's ``estimate`` is its function)
ESTIMATE: Any = importlib.import_module("sb3_gpg.estimator.estimate")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("env")
    parser.add_argument("setting")
    parser.add_argument("seed", type=int)
    parser.add_argument("--budget", type=int, help="steps (default: RL Zoo's PPO entry's, as the suite's)")
    args = parser.parse_args()
    suite = SUITES["swap"]
    (setting,) = [setting for setting in suite.settings if setting.name == args.setting]
    counts = {"rollouts with one cost per step": 0, "rollouts raised": 0}
    one_cost, novelty = ESTIMATE.one_cost, ESTIMATE.novelty

    def counted_one_cost(rewards: Any) -> bool:
        result = one_cost(rewards)
        counts["rollouts with one cost per step"] += result
        return result

    def counted_novelty(*arguments: Any) -> Any:
        counts["rollouts raised"] += 1
        return novelty(*arguments)

    ESTIMATE.one_cost, ESTIMATE.novelty = counted_one_cost, counted_novelty
    budget = budget_of(args.env, args.budget)
    with tempfile.TemporaryDirectory() as scratch:
        eval_seed = None if suite.eval_seed_offset is None else args.seed + suite.eval_seed_offset
        sys.argv = training_arguments(Run(args.env, setting, args.seed), eval_seed, budget, scratch)
        runpy.run_module(sys.argv[0], run_name="__main__")
        (evaluations,) = Path(scratch).glob("logs/*/*/evaluations.npz")
        # the same final evaluation as the suite's run of the seed: the same training
        final = float(np.load(evaluations)["results"][-1].mean())
    print(f"{args.env} {args.setting} seed {args.seed}: {counts}, final evaluation {final:.2f}")


if __name__ == "__main__":
    main()
