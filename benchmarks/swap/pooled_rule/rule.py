"""The rule of the pooled candidate (README.md): over the 17 tasks on the seeds given, the lagged choice of a pooled
level with 8 folds and the goal's lapse against the current default rerun on the same code
(``swap_rules.candidate_rule``), from this folder's runs, then the screens' (``../diagnosis/pooled_candidate``).

    python benchmarks/swap/pooled_rule/rule.py 100 101 104 105 106 107
"""

import sys
from pathlib import Path

from sb3_gpg_bench import swap_rules

HERE = Path(__file__).parent
SCREENS = HERE.parent / "diagnosis" / "pooled_candidate"
# folds_mcc before folds_acrobot: the sparse screen's MountainCarContinuous-v0 candidate runs there were made before a
# fold trained on fewer than two trajectories kept the level given, and folds_mcc reran them on the fixed code
ROOTS = [HERE, *(SCREENS / name for name in ("folds_mcc", "folds_ant", "folds_idp", "folds_acrobot"))]
CANDIDATE = "gpg_swap_pooled32_previous_folds8"

if __name__ == "__main__":
    seeds = [int(seed) for seed in sys.argv[1:]] or list(swap_rules.SIX_SEEDS)
    reference, candidate = "gpg_swap_lambda_default", f"{CANDIDATE}_lapse"
    swap_rules.candidate_rule(ROOTS, reference, candidate, seeds, candidate_auto=f"{CANDIDATE}_auto")
