"""The rule of the trend candidate with the optimism (README.md): over the 17 tasks on the seeds given, the candidate
against the current default rerun on the same code (``swap_rules.candidate_rule``), from this folder's runs, then the
trend rule's (the default's reruns) and the trend parts' (the candidate's four sparse-task runs of its screen).

    python benchmarks/swap/optimism_rule/rule.py 100 101 104 105 106 107
"""

import sys
from pathlib import Path

from sb3_gpg_bench import swap_rules

HERE = Path(__file__).parent
ROOTS = [HERE, HERE.parent / "trend_rule", HERE.parent / "diagnosis" / "trend_parts"]

if __name__ == "__main__":
    seeds = [int(seed) for seed in sys.argv[1:]] or list(swap_rules.SIX_SEEDS)
    swap_rules.candidate_rule(ROOTS, "gpg_swap_lambda_default", "gpg_swap_trend_long_folds8_optimism", seeds)
