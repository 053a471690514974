"""
How each level of the linear baseline's memory follows returns that drift (README.md, "Levels on a trend"): on the
sound default's drift task (``tests/test_sound_default.py``: rewards of one scale a rollout, episodes cut at all
times), the value the bootstrap gives the cut states over their true value, under returns growing 5% a rollout (the
largest miss from the third rollout on) and after the rewards double (the ratio one to four rollouts after), at GAE's
lambda 1 and 0.95.

    PYTHONPATH=. python benchmarks/swap/diagnosis/level_drift.py
"""

import numpy as np

from tests.test_sound_default import bootstrap_ratios

LONG = {"memory": 32, "recency": 0.9, "memory_weight": None}
LEVELS = {
    "own (the default)": {},
    "trend, 8 rollouts capped": {"level": "trend"},
    "pooled, 8 rollouts capped": {"level": "pooled"},
    "trend, 32 uncapped, 8 folds": {**LONG, "level": "trend", "n_folds": 8},
    "pooled, 32 uncapped, 8 folds": {**LONG, "level": "pooled", "n_folds": 8},
    "own, 32 uncapped, 8 folds": {**LONG, "n_folds": 8},
}


def main() -> None:
    for name, kwargs in LEVELS.items():
        for lambda_target in (False, True):
            growth = bootstrap_ratios(1.05 ** np.arange(20), lambda_target, kwargs)
            doubling = bootstrap_ratios([1.0] * 16 + [2.0] * 6, lambda_target, kwargs)
            print(
                f"{name}, lambda {0.95 if lambda_target else 1.0}: growth's largest miss {np.abs(growth[2:] - 1).max():.3f}"
                f" (last {growth[-1]:.3f}); after the doubling {' / '.join(f'{ratio:.2f}' for ratio in doubling[16:20])}"
            )


if __name__ == "__main__":
    main()
