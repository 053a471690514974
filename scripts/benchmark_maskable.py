"""
MaskableGPG beside sb3-contrib's MaskablePPO, same settings, seeds, budget and evaluation: sb3-contrib's three
invalid-action envs and Gymnasium's Taxi (a small puzzle whose info gives the legal moves; without masks, illegal
pick-ups and drop-offs cost 10 each).

Each run trains with masks, is evaluated with masks (sb3-contrib's ``evaluate_policy``, deterministic, on its own
evaluation seeds) after every ``eval_every`` iterations, and counts the invalid actions it took in training. Writes
into --out: runs/<env>__<algo>__seed<k>.csv (finished runs are not run again), results.md (final and last-three mean
evaluation, mean +- std over seeds; training seconds per iteration; policy parameters) and one plot per env.

    python scripts/benchmark_maskable.py --seeds 0 1 2 3 --jobs 2
    python scripts/benchmark_maskable.py --report-only
"""

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchmark_paper import read_csv, write_csv

# sb3-contrib's test settings for the invalid-action envs (gamma 0.4, rollouts of 2,048 samples, PPO's other defaults);
# Taxi: 8 envs x 256 steps, entropy bonus 0.01
INVALID = dict(n_envs=4, n_steps=512, batch_size=64, n_epochs=10, gamma=0.4, ent_coef=0.0, iterations=5, eval_every=1)
TAXI = dict(n_envs=8, n_steps=256, batch_size=256, n_epochs=10, gamma=0.99, ent_coef=0.01, iterations=100, eval_every=10)
ENVS = {
    "InvalidActionEnvDiscrete": INVALID,
    "InvalidActionEnvMultiDiscrete": INVALID,
    "InvalidActionEnvMultiBinary": INVALID,
    "Taxi-v4": TAXI,
}
# GPG's variants: its defaults, and state binning (the exact discrete state, with a global fallback under 2 returns)
ALGOS = {
    "gpg_mask": {},
    "gpg_mask_state": dict(binning="state", min_bin_count=2),
    "ppo_mask": {},
}
EVAL_EPISODES = 20
EVAL_SEED_OFFSET = 10_000


def make_env(env_id: str):
    from sb3_contrib.common.envs import InvalidActionEnvDiscrete, InvalidActionEnvMultiBinary, InvalidActionEnvMultiDiscrete

    if env_id == "InvalidActionEnvDiscrete":
        return InvalidActionEnvDiscrete(dim=80, n_invalid_actions=60)
    if env_id == "InvalidActionEnvMultiDiscrete":
        return InvalidActionEnvMultiDiscrete(dims=[4, 4, 4], n_invalid_actions=6)
    if env_id == "InvalidActionEnvMultiBinary":
        return InvalidActionEnvMultiBinary(dims=4, n_invalid_actions=2)
    import gymnasium as gym

    from sb3_gpg.common.maskable.wrappers import ActionMaskFromInfo

    return ActionMaskFromInfo(gym.make(env_id))


def invalid_action_count(env, actions: np.ndarray) -> int:
    """Actions the envs' current masks forbid (sb3-contrib's flat mask layout)."""
    from sb3_contrib.common.maskable.utils import get_action_masks

    from sb3_gpg.common.maskable.utils import mask_sizes

    masks, offset, count = get_action_masks(env), 0, 0
    for size, choices in zip(mask_sizes(env.action_space), np.reshape(actions, (env.num_envs, -1)).T, strict=True):
        count += int((~masks[np.arange(env.num_envs), offset + choices.astype(int)]).sum())
        offset += size
    return count


def train_and_evaluate(env_id: str, algo: str, seed: int, overrides: dict | None = None) -> list[dict]:
    import torch as th
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.evaluation import evaluate_policy
    from stable_baselines3.common.env_util import make_vec_env

    from sb3_gpg import MaskableGPG

    th.set_num_threads(1)
    settings = {**ENVS[env_id], **(overrides or {})}
    n_envs, iterations, eval_every = settings.pop("n_envs"), settings.pop("iterations"), settings.pop("eval_every")
    env = make_vec_env(lambda: make_env(env_id), n_envs=n_envs, seed=seed)
    eval_env = make_vec_env(lambda: make_env(env_id), n_envs=1, seed=seed + EVAL_SEED_OFFSET)
    algorithm = MaskablePPO if algo == "ppo_mask" else MaskableGPG
    model = algorithm("MlpPolicy", env, seed=seed, device="cpu", **settings, **ALGOS[algo])

    invalid = [0]  # invalid actions sent to the training envs
    real_step_async = env.step_async

    def step_async(actions):
        invalid[0] += invalid_action_count(env, actions)
        real_step_async(actions)

    env.step_async = step_async
    rows, train_seconds = [], 0.0
    for iteration in range(eval_every, iterations + 1, eval_every):
        start = time.perf_counter()
        model.learn(eval_every * model.n_steps * n_envs, reset_num_timesteps=False)
        train_seconds += time.perf_counter() - start
        mean, std = evaluate_policy(model, eval_env, n_eval_episodes=EVAL_EPISODES, warn=False)
        rows.append(
            dict(
                env=env_id, algo=algo, seed=seed, iteration=iteration, env_steps=model.num_timesteps,
                train_seconds=round(train_seconds, 2), eval_mean=mean, eval_std=std, invalid_actions=invalid[0],
                parameters=sum(p.numel() for p in model.policy.parameters()),
            )
        )  # fmt: skip
    return rows


def report(out: Path) -> str:
    runs = [read_csv(path) for path in sorted((out / "runs").glob("*.csv"))]
    lines = [
        "# MaskableGPG beside MaskablePPO",
        "",
        "Deterministic evaluation with masks, 20 episodes on separate seeds; mean +- std over training seeds (n). "
        "*last 3*: mean of the last three evaluations; *s / iter*: training wall time per iteration (rollout and "
        "update, one torch thread, two runs at a time on 2 cores); *invalid*: invalid actions taken in training.",
        "",
        "| env | algo | n | final | last 3 | s / iter | invalid | parameters |",
        "|---|---|---|---|---|---|---|---|",
    ]
    cells: dict[tuple[str, str], list[list[dict]]] = {}
    for rows in runs:
        cells.setdefault((rows[0]["env"], rows[0]["algo"]), []).append(rows)
    for (env_id, algo), cell_runs in sorted(cells.items(), key=lambda item: (item[0][0], list(ALGOS).index(item[0][1]))):
        final = [rows[-1]["eval_mean"] for rows in cell_runs]
        last = [np.mean([row["eval_mean"] for row in rows[-3:]]) for rows in cell_runs]
        per_iteration = [float(rows[-1]["train_seconds"]) / rows[-1]["iteration"] for rows in cell_runs]
        invalid = sum(int(rows[-1]["invalid_actions"]) for rows in cell_runs)
        lines.append(
            f"| {env_id} | {algo} | {len(cell_runs)} | {np.mean(final):.1f} +- {np.std(final):.1f} | "
            f"{np.mean(last):.1f} +- {np.std(last):.1f} | {np.mean(per_iteration):.3f} | {invalid} | "
            f"{int(cell_runs[0][-1]['parameters'])} |"
        )
    plot(cells, out)
    return "\n".join(lines) + "\n"


def plot(cells: dict[tuple[str, str], list[list[dict]]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    env_ids = sorted({env_id for env_id, _ in cells})
    figure, axes = plt.subplots(1, len(env_ids), figsize=(4.5 * len(env_ids), 3.6), squeeze=False)
    for axis, env_id in zip(axes[0], env_ids, strict=True):
        for algo in ALGOS:
            if (env_id, algo) not in cells:
                continue
            runs = cells[(env_id, algo)]
            steps = [row["env_steps"] for row in runs[0]]
            values = np.array([[row["eval_mean"] for row in rows] for rows in runs])
            axis.plot(steps, values.mean(axis=0), label=f"{algo} ({len(runs)})")
            axis.fill_between(steps, values.min(axis=0), values.max(axis=0), alpha=0.2)
        axis.set(title=env_id, xlabel="env steps", ylabel="evaluation return")
        axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(out / "curves.png", dpi=100)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", default=list(ENVS), choices=list(ENVS))
    parser.add_argument("--algos", nargs="+", default=list(ALGOS), choices=list(ALGOS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/maskable"))
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--iterations", type=int, help="override every env's iterations (smoke tests)")
    parser.add_argument("--n-steps", type=int, help="override every env's steps per env per rollout (smoke tests)")
    args = parser.parse_args()
    (args.out / "runs").mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        todo = [
            (env_id, algo, seed)
            for env_id in args.envs
            for algo in args.algos
            for seed in args.seeds
            if not (args.out / "runs" / f"{env_id}__{algo}__seed{seed}.csv").exists()
        ]
        print(f"{len(todo)} runs to do on {args.jobs} process(es)", flush=True)
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        with ProcessPoolExecutor(args.jobs) as pool:
            overrides = {key: value for key, value in (("iterations", args.iterations), ("n_steps", args.n_steps)) if value}
            if args.iterations:
                overrides["eval_every"] = 1
            futures = {pool.submit(train_and_evaluate, *run, overrides): run for run in todo}
            for future in as_completed(futures):
                env_id, algo, seed = futures[future]
                rows = future.result()
                write_csv(args.out / "runs" / f"{env_id}__{algo}__seed{seed}.csv", rows)
                print(f"{env_id} {algo} seed {seed}: final {rows[-1]['eval_mean']:.1f}", flush=True)
    text = report(args.out)
    (args.out / "results.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
