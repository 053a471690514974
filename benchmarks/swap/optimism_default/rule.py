"""The rule of the linear baseline's optimism as the constructor's default (README.md): over the 17 tasks on the seeds
given, ``gpg_swap_optimism`` against the current default rerun on the same code (``swap_rules.candidate_rule``), from
this folder's runs, the fixed option's check (``../diagnosis/optimism_fixed``) and the trend rule's reruns of the
default; on the 14 tasks where the option cannot act, the newest six-seed runs of the default stand for both.

    python benchmarks/swap/optimism_default/rule.py 100 101 104 105 106 107
"""

import sys
from pathlib import Path

from sb3_gpg_bench import swap_rules

HERE = Path(__file__).parent
SWAP = HERE.parent
ROOTS = [HERE, SWAP / "diagnosis" / "optimism_fixed", SWAP / "trend_rule"]
LAMBDA_TARGET = (SWAP / "lambda_target", "gpg_swap_lambda")
NEWEST = {
    **{task: (SWAP / "trend_rule", "gpg_swap_lambda_default") for task in ("Pendulum-v1", "CartPole-v1")},
    **{task: (SWAP / "sound_default", swap_rules.NEW) for task in ("Ant-v5", "Pusher-v5", "Reacher-v5")},
}

if __name__ == "__main__":
    seeds = [int(seed) for seed in sys.argv[1:]] or list(swap_rules.SIX_SEEDS)
    unchanged = {task: NEWEST.get(task, LAMBDA_TARGET) for task in swap_rules.tasks() if task not in swap_rules.OPTIMISM_TASKS}
    swap_rules.candidate_rule(ROOTS, "gpg_swap_lambda_default", "gpg_swap_optimism", seeds, unchanged)
