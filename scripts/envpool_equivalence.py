"""
Are EnvPool's environments the Gymnasium ones? Two checks, written to benchmarks/envpool/:

1. Returns of a fixed policy: for each env a policy is trained once (PPO on Gymnasium's env, a short budget so that
   episode returns still vary), then its deterministic mean return over --episodes episodes is measured on
   Gymnasium's env (DummyVecEnv) and on EnvPool's (EnvPoolVecEnv), with evaluation seeds of their own. Reported: both
   means, their difference and its standard error, and the difference in standard errors (|z| < 2: within noise).
2. Learning curves per backend: the paper runner's runs of the same configuration trained on each backend (evaluated
   on Gymnasium's env, as every run), plotted side by side.

    python scripts/envpool_equivalence.py --returns --output benchmarks/envpool
    python scripts/benchmark_paper.py --envs LunarLander-v3 --n-envs 16 --seeds 0 1 --algos gpg ppo --vec-env envpool \\
        --jobs 1 --out benchmarks/envpool/lunarlander
    python scripts/envpool_equivalence.py --curves benchmarks/paper/lunarlander benchmarks/envpool/lunarlander \\
        --curve-env LunarLander-v3 --curve-n-envs 16 --curve-seeds 0 1 --output benchmarks/envpool
"""

import argparse
import json
import platform
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch as th
from stable_baselines3 import PPO
from stable_baselines3.common.evaluation import evaluate_policy
from tqdm import tqdm

import sb3_gpg
from sb3_gpg_bench.experiments import make_envs, pyplot, read_csv, run_file

# env id -> PPO training steps and n_envs: budgets at which the policy is good enough to matter (HalfCheetah runs, it
# does not stand still) and its returns still vary between episodes
POLICIES = {"CartPole-v1": (20_000, 4), "LunarLander-v3": (200_000, 8), "HalfCheetah-v5": (1_000_000, 8)}


def fixed_policy_returns(env_id: str, episodes: int, seed: int) -> dict:
    steps, n_envs = POLICIES[env_id]
    model = PPO("MlpPolicy", make_envs(env_id, n_envs, seed), seed=seed, device="cpu").learn(steps)
    n_eval_envs = 10
    backends = {
        "gymnasium": make_envs(env_id, n_eval_envs, seed + 1_000),
        "envpool": make_envs(env_id, n_eval_envs, seed + 2_000, "envpool", num_threads=1),
    }
    result: dict = {"env": env_id, "policy": f"PPO, {steps} steps on Gymnasium's env, {n_envs} envs", "episodes": episodes}
    for name, env in backends.items():
        start = time.perf_counter()
        returns, lengths = evaluate_policy(
            model, env, n_eval_episodes=episodes, deterministic=True, return_episode_rewards=True
        )
        result[name] = dict(
            mean=float(np.mean(returns)),
            std=float(np.std(returns, ddof=1)),
            stderr=float(np.std(returns, ddof=1) / np.sqrt(len(returns))),
            mean_length=float(np.mean(lengths)),
            seconds=time.perf_counter() - start,
        )
        env.close()
    difference = result["envpool"]["mean"] - result["gymnasium"]["mean"]
    stderr = float(np.hypot(result["envpool"]["stderr"], result["gymnasium"]["stderr"]))
    result.update(difference=difference, difference_stderr=stderr, z=difference / stderr if stderr > 0 else 0.0)
    return result


def returns_markdown(results: list[dict], command: str) -> str:
    lines = [
        "# EnvPool against Gymnasium: returns of a fixed policy",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: {platform.machine()}, Python {platform.python_version()}, torch {th.__version__}, "
        f"sb3_gpg {sb3_gpg.__version__}, envpool {__import__('envpool').__version__}, "
        f"gymnasium {__import__('gymnasium').__version__}.",
        "",
        "Each policy was trained once on Gymnasium's env, then evaluated deterministically on both backends (10 envs "
        "each, their own evaluation seeds). Mean ± standard error over the episodes; *z*: the difference over its "
        "standard error (|z| < 2: within noise).",
        "",
        "| env | policy | episodes | Gymnasium | EnvPool | EnvPool minus Gymnasium | z | mean length (G / E) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        g, e = r["gymnasium"], r["envpool"]
        lines.append(
            f"| {r['env']} | {r['policy']} | {r['episodes']} | {g['mean']:.1f} ± {g['stderr']:.1f} | "
            f"{e['mean']:.1f} ± {e['stderr']:.1f} | {r['difference']:+.1f} ± {r['difference_stderr']:.1f} | "
            f"{r['z']:+.2f} | {g['mean_length']:.0f} / {e['mean_length']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def read_runs(runs_dir: Path, env_id: str, n_envs: int, seeds: list[int]) -> dict[str, dict[int, list[tuple[int, float]]]]:
    """algo -> seed -> [(iteration, evaluation)] of the finished runs of one configuration."""
    runs: dict[str, dict[int, list[tuple[int, float]]]] = defaultdict(dict)
    for algo in ("gpg", "ppo"):
        for seed in seeds:
            path = run_file(runs_dir / "runs", (env_id, algo, n_envs, seed), "csv")
            if path.exists():
                runs[algo][seed] = [(row["iteration"], row["eval_mean"]) for row in read_csv(path)]
    return runs


def plot_curves(dirs: dict[str, Path], env_id: str, n_envs: int, seeds: list[int], output: Path) -> tuple[Path, str]:
    """Mean evaluation curve per algorithm and backend (band: min-max over seeds), and a table of the last ones."""
    plt = pyplot()
    figure, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
    lines = [
        "| backend | algo | seeds | final | mean of the last five evaluations |",
        "|---|---|---|---|---|",
    ]
    for axis, algo in zip(axes, ("gpg", "ppo"), strict=True):
        for color, (backend, runs_dir) in zip(("C0", "C1"), dirs.items(), strict=False):
            runs = read_runs(runs_dir, env_id, n_envs, seeds)[algo]
            if not runs:
                continue
            iterations = [iteration for iteration, _ in next(iter(runs.values()))]
            values = np.array([[value for _, value in curve] for curve in runs.values()])
            axis.plot(iterations, values.mean(axis=0), color=color, label=f"{backend} ({len(runs)} seeds)")
            axis.fill_between(iterations, values.min(axis=0), values.max(axis=0), color=color, alpha=0.2)
            finals, last_five = values[:, -1], values[:, -5:].mean(axis=1)
            lines.append(
                f"| {backend} | {algo} | {', '.join(map(str, runs))} | {finals.mean():.1f} ± {finals.std():.1f} | "
                f"{last_five.mean():.1f} ± {last_five.std():.1f} |"
            )
        axis.set_title(f"{algo.upper()}, {n_envs} envs")
        axis.set_xlabel("iteration")
        axis.legend(loc="lower right")
    axes[0].set_ylabel("evaluation return (Gymnasium's env)")
    figure.suptitle(f"{env_id}: trained on Gymnasium's envs or on EnvPool's (mean over seeds, band: min-max)")
    figure.tight_layout()
    path = output / f"{env_id}_{n_envs}envs_backends.png"
    figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(figure)
    return path, "\n".join(lines) + "\n\n± : std over seeds (ddof 0).\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--returns", action="store_true", help="fixed-policy returns on both backends")
    parser.add_argument("--envs", nargs="+", default=list(POLICIES), choices=list(POLICIES))
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--curves", nargs=2, type=Path, metavar=("GYMNASIUM_DIR", "ENVPOOL_DIR"), help="runner folders")
    parser.add_argument("--curve-env", default="LunarLander-v3")
    parser.add_argument("--curve-n-envs", type=int, default=16)
    parser.add_argument("--curve-seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--output", type=Path, default=Path("benchmarks/envpool"))
    args = parser.parse_args()
    th.set_num_threads(1)
    args.output.mkdir(parents=True, exist_ok=True)
    command = "python scripts/envpool_equivalence.py " + " ".join(sys.argv[1:])
    if args.returns:
        results = [fixed_policy_returns(env_id, args.episodes, args.seed) for env_id in tqdm(args.envs, desc="envs")]
        report = returns_markdown(results, command)
        (args.output / "returns.md").write_text(report)
        (args.output / "returns.json").write_text(json.dumps(results, indent=1))
        print(report)
    if args.curves:
        dirs = {"Gymnasium": args.curves[0], "EnvPool": args.curves[1]}
        path, report = plot_curves(dirs, args.curve_env, args.curve_n_envs, args.curve_seeds, args.output)
        report = (
            f"# {args.curve_env} at {args.curve_n_envs} envs, trained on each backend\n\nCommand: `{command}`\n\n" + report
        )
        (args.output / f"{args.curve_env}_{args.curve_n_envs}envs_backends.md").write_text(report)
        print(report + f"\nWrote {path}")


if __name__ == "__main__":
    main()
