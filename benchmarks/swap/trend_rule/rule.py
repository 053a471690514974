"""The rule of the trend with the long memory and 8 folds (README.md): over the 17 tasks on the seeds given, the
candidate against the current default rerun on the same code (both this folder's runs; ``swap_rules.candidate_rule``).

    python benchmarks/swap/trend_rule/rule.py 100 101 104 105 106 107
"""

import sys
from pathlib import Path

from sb3_gpg_bench import swap_rules

if __name__ == "__main__":
    seeds = [int(seed) for seed in sys.argv[1:]] or list(swap_rules.SIX_SEEDS)
    swap_rules.candidate_rule([Path(__file__).parent], "gpg_swap_lambda_default", "gpg_swap_trend_long_folds8", seeds)
