"""
Why a one-word swap can learn to end its episodes: what an untrained Gaussian policy earns per step at each initial
noise, and how each run's noise, training episodes and baseline moved over training.

``reward``: episodes of a policy whose actions are ``clip(N(0, exp(log_std)), low, high)`` (an untrained SB3 policy's
mean is near 0: its action layer starts with weights of gain 0.01), per log std: the mean episode return and length,
and the mean per step of each reward term the env reports in ``info`` (``reward_*``), written as a Markdown table.

``plot``: from suite run folders that kept ``train/std`` and ``rollout/ep_len_mean`` in ``training_log.json``, the
Gaussian policy's noise, the training episodes' length and return, and the baseline's or critic's explained variance
over training, one line per run.

    python scripts/action_noise_probe.py reward --env Ant-v5 --output benchmarks/swap/ant/reward_by_noise.md
    python scripts/action_noise_probe.py plot benchmarks/swap/ant/runs/* --output benchmarks/swap/ant/dynamics.png
"""

import argparse
from pathlib import Path

import gymnasium as gym
import numpy as np
from tqdm import tqdm

from sb3_gpg_bench.suite import read_training_log

LOG_STDS = (0.0, -0.5, -0.75, -1.0, -1.5)
# The logged series the plot shows, by panel title; the explained variance is GPG's held-out one or PPO's own
PANELS = {
    "the Gaussian's std (train/std)": ("train/std",),
    "training episodes' length": ("rollout/ep_len_mean",),
    "training episodes' return": ("rollout/ep_rew_mean",),
    "explained variance (GPG: held out; PPO: its critic's)": (
        "train/baseline_explained_variance",
        "train/explained_variance",
    ),
}


def reward_table(env_id: str, episodes: int, seed: int) -> str:
    """
    :return: a Markdown table, one row per log std of ``LOG_STDS``, of the episodes' mean return and length and each
        reward term's mean per step
    """
    env = gym.make(env_id)
    low, high = env.action_space.low, env.action_space.high
    rng = np.random.default_rng(seed)
    rows, terms = [], None
    for log_std in tqdm(LOG_STDS, desc="log std"):
        returns, lengths, per_term = [], [], {}
        for episode in range(episodes):
            env.reset(seed=seed + episode)
            total, length, done = 0.0, 0, False
            while not done:
                action = np.clip(rng.normal(0.0, np.exp(log_std), env.action_space.shape), low, high)
                _, reward, terminated, truncated, info = env.step(action)
                total, length, done = total + float(reward), length + 1, terminated or truncated
                for key, value in info.items():
                    if key.startswith("reward_"):
                        per_term.setdefault(key, []).append(float(value))
            returns.append(total)
            lengths.append(length)
        terms = terms or sorted(per_term)
        per_step = sum(np.mean(per_term[key]) for key in terms)
        cells = [f"{np.mean(per_term[key]):.3f}" for key in terms]
        rows.append(f"| {log_std} | {np.mean(returns):.1f} ± {np.std(returns):.1f} | {np.mean(lengths):.0f} | "
                     f"{' | '.join(cells)} | {per_step:.3f} |")  # fmt: skip
    header = f"| log std | return | length | {' | '.join(terms or [])} | reward per step |"
    return "\n".join([header, "|" + "---|" * (len(terms or []) + 4), *rows])


def plot(folders: list[Path], output: Path) -> None:
    """Write one panel per ``PANELS`` entry, a line per run folder, to ``output``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(PANELS), figsize=(5 * len(PANELS), 4))
    for folder in folders:
        logged = read_training_log(folder)
        for ax, keys in zip(axes, PANELS.values(), strict=True):
            series = next((np.asarray(logged[key], dtype=float) for key in keys if logged.get(key)), None)
            if series is not None:
                ax.plot(series[:, 0], series[:, 1], label=folder.name, lw=1)
    for ax, title in zip(axes, PANELS, strict=True):
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("steps")
    axes[-1].set_ylim(-2, 1)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    reward = commands.add_parser("reward", help="each reward term per step of an untrained policy, by its noise")
    reward.add_argument("--env", default="Ant-v5")
    reward.add_argument("--episodes", type=int, default=20)
    reward.add_argument("--seed", type=int, default=0)
    reward.add_argument("--output", type=Path, required=True)
    curves = commands.add_parser("plot", help="noise, episodes and explained variance over training, from run folders")
    curves.add_argument("folders", type=Path, nargs="+")
    curves.add_argument("--output", type=Path, required=True)
    args = parser.parse_args()
    if args.command == "reward":
        if args.episodes < 1:
            parser.error(f"--episodes must be at least 1, got {args.episodes}")
        args.output.parent.mkdir(parents=True, exist_ok=True)
        table = reward_table(args.env, args.episodes, args.seed)
        args.output.write_text(table + "\n")
        print(table)
    else:
        plot(args.folders, args.output)


if __name__ == "__main__":
    main()
