"""Hopper-v5 in the swap, the task that has decided the memory's screens as the default: each evaluation of each seed
per setting (mean of its 10 episodes), and how many evaluation episodes ended with the hopper fallen (shorter than
1,000 steps) or standing to the end, in the second half of training, with the mean return of each: above
1,000 the hopper also moves forward (Hopper-v5's reward is 1 per step alive plus the forward velocity, less a small
cost of the action).

    python benchmarks/swap/default_memory/hopper.py benchmarks/swap/default_memory
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

out = Path(sys.argv[1])
settings = ["ppo", "gpg_swap_linear", "gpg_swap_memory_recency0.5", "gpg_swap_memory_recency0.8", "gpg_swap_memory"]
runs = {n: sorted((out / "runs").glob(f"Hopper-v5__{n}__seed*")) for n in settings}
runs = {n: r for n, r in runs.items() if r}
print("| setting | seeds | episodes fallen, 2nd half | their mean return | mean return of the episodes that stood |")
print("|---|---|---|---|---|")
fig, axes = plt.subplots(1, len(runs), figsize=(3.2 * len(runs), 3), sharey=True, squeeze=False)
for ax, (name, paths) in zip(axes[0], runs.items(), strict=True):
    fell, total, stood = [], 0, []
    for path in paths:
        e = np.load(path / "evaluations.npz")
        ax.plot(e["timesteps"], e["results"].mean(1), label=path.name.rsplit("seed", 1)[1], lw=1)
        half = len(e["timesteps"]) // 2
        lengths, returns = e["ep_lengths"][half:], e["results"][half:]
        fell += list(returns[lengths < 1000])
        total += lengths.size
        stood += list(returns[lengths == 1000])
    seeds = ", ".join(p.name.rsplit("seed", 1)[1] for p in paths)
    print(f"| {name} | {seeds} | {len(fell)} of {total} | {np.mean(fell):.1f} | {np.mean(stood):.1f} |")
    ax.set_title(name, fontsize=8)
    ax.set_xlabel("steps")
    ax.legend(fontsize=6, title="seed", title_fontsize=6)
axes[0][0].set_ylabel("evaluation return")
fig.tight_layout()
fig.savefig(out / "hopper.png", dpi=120)
