"""
sb3_gpg's counterparts of sb3-contrib's algorithms beside them, with the same settings, seeds, budget and evaluation:

- ``--family maskable``: MaskableGPG and MaskablePPO on sb3-contrib's three invalid-action envs and Gymnasium's Taxi
  (a small puzzle whose info gives the legal moves; without masks, illegal pick-ups and drop-offs cost 10 each).
  Evaluated with masks; the invalid actions taken in training are counted.
- ``--family recurrent``: RecurrentGPG and RecurrentPPO (each with its defaults for the critic: RecurrentPPO has a
  critic LSTM) on RL Zoo's partially observed CartPoleNoVel-v1 and PendulumNoVel-v1.

Each run is evaluated (deterministic, on its own evaluation seeds) after every ``eval_every`` iterations, in its own
process, which reports its peak resident memory. Writes into --out (default benchmarks/<family>):
runs/<env>__<algo>__seed<k>.csv (finished runs are not run again), results.md (final and last-three mean evaluation,
mean +- std over seeds; training seconds per iteration; policy parameters; peak memory) and curves.png.

    python scripts/benchmark_contrib.py --family maskable --seeds 0 1 2 3 --jobs 2
    python scripts/benchmark_contrib.py --family recurrent --seeds 0 1 2 3 --jobs 2
    python scripts/benchmark_contrib.py --family recurrent --report-only
    python scripts/benchmark_contrib.py --family maskable --timing 10   # seconds per iteration, alternated
"""

import argparse
import os
import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from sb3_gpg_bench.contrib import cell_row, cells, footprint, table_head, table_key
from sb3_gpg_bench.experiments import (
    EVAL_NORMALIZE,
    MaskablePeriodicEvaluation,
    PeriodicEvaluation,
    make_envs,
    panel_grid,
    pyplot,
    write_csv,
)
from sb3_gpg_bench.grid import run_grid

# sb3-contrib's test settings for the invalid-action envs (gamma 0.4, rollouts of 2,048 samples, PPO's other defaults);
# Taxi: 8 envs x 256 steps, entropy bonus 0.01
INVALID = dict(n_envs=4, n_steps=512, batch_size=64, n_epochs=10, gamma=0.4, ent_coef=0.0, iterations=5, eval_every=1)
TAXI = dict(n_envs=8, n_steps=256, batch_size=256, n_epochs=10, gamma=0.99, ent_coef=0.01, iterations=100, eval_every=10)
# hyperparams/gpg_lstm.yml's entries (from RL Zoo's RecurrentPPO ones), with tanh activations (PyTorch's default) and,
# on CartPoleNoVel, without observation normalisation
LSTM_KWARGS = dict(lstm_hidden_size=64, ortho_init=False)
CARTPOLE_NOVEL = dict(n_envs=8, n_steps=256, batch_size=512, n_epochs=10, gamma=0.98, learning_rate=1e-3, iterations=50,
                      eval_every=5, policy_kwargs=dict(net_arch=[64], **LSTM_KWARGS))  # fmt: skip
# Pendulum with RL Zoo's observation and reward normalisation (VecNormalize), as its entry has it: rewards of -16 to 0 a
# step are left unscaled otherwise (a first GPG run without it, seed 0, ended at -1384, no better than its start)
PENDULUM_NOVEL = dict(n_envs=4, n_steps=1024, n_epochs=10, gamma=0.9, learning_rate=1e-3, use_sde=True, sde_sample_freq=4,
                      iterations=25, eval_every=5, normalize=True,
                      policy_kwargs=dict(net_arch=[64], **LSTM_KWARGS))  # fmt: skip
FAMILIES = {
    "maskable": dict(
        envs={
            "InvalidActionEnvDiscrete": INVALID,
            "InvalidActionEnvMultiDiscrete": INVALID,
            "InvalidActionEnvMultiBinary": INVALID,
            "Taxi-v4": TAXI,
        },
        # GPG's defaults, and state binning (the exact discrete state, with a global fallback under 2 returns)
        algos={"gpg_mask": {}, "gpg_mask_state": dict(binning="state", min_bin_count=2), "ppo_mask": {}},
    ),
    "recurrent": dict(
        envs={"CartPoleNoVel-v1": CARTPOLE_NOVEL, "PendulumNoVel-v1": PENDULUM_NOVEL},
        algos={"gpg_lstm": {}, "ppo_lstm": {}},
    ),
}
EVAL_EPISODES = 20
EVAL_SEED_OFFSET = 10_000


def make_env(env_id: str):
    import gymnasium as gym
    from sb3_contrib.common.envs import InvalidActionEnvDiscrete, InvalidActionEnvMultiBinary, InvalidActionEnvMultiDiscrete

    from sb3_gpg.common.wrappers import ActionMaskFromInfo

    if env_id == "InvalidActionEnvDiscrete":
        return InvalidActionEnvDiscrete(dim=80, n_invalid_actions=60)
    if env_id == "InvalidActionEnvMultiDiscrete":
        return InvalidActionEnvMultiDiscrete(dims=[4, 4, 4], n_invalid_actions=6)
    if env_id == "InvalidActionEnvMultiBinary":
        return InvalidActionEnvMultiBinary(dims=4, n_invalid_actions=2)
    if env_id == "Taxi-v4":
        return ActionMaskFromInfo(gym.make(env_id))
    import rl_zoo3.import_envs  # noqa: F401 (registers the NoVel envs)

    return gym.make(env_id)


def invalid_action_count(env, actions: np.ndarray) -> int:
    """Actions the envs' current masks forbid (sb3-contrib's flat mask layout)."""
    from sb3_contrib.common.maskable.utils import get_action_masks

    from sb3_gpg.common.maskable.utils import mask_sizes

    masks, offset, count = get_action_masks(env), 0, 0
    for size, choices in zip(mask_sizes(env.action_space), np.reshape(actions, (env.num_envs, -1)).T, strict=True):
        count += int((~masks[np.arange(env.num_envs), offset + choices.astype(int)]).sum())
        offset += size
    return count


def build_model(family: str, env_id: str, algo: str, seed: int, overrides: dict | None = None):
    """
    :return: the algorithm on its training envs with the family's settings for the env, and the number of
        iterations and the evaluation period
    """
    import torch as th
    from sb3_contrib import MaskablePPO, RecurrentPPO

    from sb3_gpg import MaskableGPG, RecurrentGPG

    th.set_num_threads(1)
    settings = {**FAMILIES[family]["envs"][env_id], **(overrides or {})}
    n_envs, iterations, eval_every = settings.pop("n_envs"), settings.pop("iterations"), settings.pop("eval_every")
    normalize = {"gamma": settings["gamma"]} if settings.pop("normalize", False) else None
    env = make_envs(lambda: make_env(env_id), n_envs, seed, normalize=normalize)
    algorithm = {"gpg_lstm": RecurrentGPG, "ppo_lstm": RecurrentPPO, "ppo_mask": MaskablePPO}.get(algo, MaskableGPG)
    policy = "MlpLstmPolicy" if family == "recurrent" else "MlpPolicy"
    model = algorithm(policy, env, seed=seed, device="cpu", **settings, **FAMILIES[family]["algos"][algo])
    return model, iterations, eval_every


def train_and_evaluate(family: str, env_id: str, algo: str, seed: int, overrides: dict | None = None) -> list[dict]:
    """
    One run: train in one learn() call, evaluating (deterministic, on the run's own evaluation seeds) after every
    ``eval_every`` iterations and after the last.

    :return: one row per evaluation
    """
    model, iterations, eval_every = build_model(family, env_id, algo, seed, overrides)
    env = model.get_env()
    # Evaluated on true rewards, with the training envs' observation statistics where they are normalised
    normalize = EVAL_NORMALIZE if model.get_vec_normalize_env() is not None else None
    eval_env = make_envs(lambda: make_env(env_id), 1, seed + EVAL_SEED_OFFSET, normalize=normalize)

    invalid = [0]  # invalid actions sent to the training envs
    if family == "maskable":
        real_step_async = env.step_async

        def step_async(actions):
            invalid[0] += invalid_action_count(env, actions)
            real_step_async(actions)

        env.step_async = step_async

    def row(evaluation: PeriodicEvaluation) -> dict[str, Any]:
        return dict(
            env=env_id, algo=algo, seed=seed, iteration=evaluation.iteration, env_steps=model.num_timesteps,
            train_seconds=round(evaluation.training_seconds, 2), eval_mean=evaluation.last_mean_reward,
            eval_std=np.std(evaluation.episode_returns), invalid_actions=invalid[0], **footprint(model, buffer_digits=2),
        )  # fmt: skip

    # With masks where the family has them (sb3-contrib's MaskableEvalCallback)
    evaluation_class = MaskablePeriodicEvaluation if family == "maskable" else PeriodicEvaluation
    evaluation = evaluation_class(eval_env, eval_every, row, n_eval_episodes=EVAL_EPISODES, warn=False)
    model.learn(iterations * model.n_steps * model.n_envs, callback=evaluation)
    evaluation.evaluate()  # the last iteration's: no rollout starts after it
    return evaluation.rows


def timing(family: str, env_ids: list[str], algos: list[str], repeats: int) -> str:
    """
    Seconds per training iteration (rollout and update) of each algorithm, measured in this one process with the
    algorithms alternated (so that a change in the machine's load falls on all of them), after one warm-up iteration.

    :return: a Markdown table of the medians over ``repeats`` iterations
    """
    lines = ["| env | " + " | ".join(f"{algo} s / iter" for algo in algos) + " |", "|---" * (len(algos) + 1) + "|"]
    for env_id in env_ids:
        models = {algo: build_model(family, env_id, algo, seed=0)[0] for algo in algos}
        for model in models.values():
            model.learn(model.n_steps * model.n_envs)  # warm-up
        seconds: dict[str, list[float]] = {algo: [] for algo in algos}
        for _ in range(repeats):
            for algo, model in models.items():
                start = time.perf_counter()
                model.learn(model.n_steps * model.n_envs, reset_num_timesteps=False)
                seconds[algo].append(time.perf_counter() - start)
        lines.append(f"| {env_id} | " + " | ".join(f"{np.median(seconds[algo]):.3f}" for algo in algos) + " |")
    return "\n".join(lines) + "\n"


def report(family: str, out: Path) -> str:
    algos = list(FAMILIES[family]["algos"])
    lines = [
        f"# {family}: sb3_gpg beside sb3-contrib",
        "",
        table_key(
            f"Deterministic evaluation{' with masks' if family == 'maskable' else ''}, {EVAL_EPISODES} episodes on "
            "separate seeds",
            "invalid actions taken in training",
            "one torch thread, two runs at a time on 2 cores",
        ),
        "",
        *table_head(["env", "algo", "n"]),
    ]
    found = cells(out / "runs", algos)
    for (env_id, algo), cell_runs in found:
        lines.append(f"| {env_id} | {algo} | {len(cell_runs)} | {cell_row(cell_runs, 'invalid_actions', 1, 2)} |")
    plot(dict(found), algos, out)
    return "\n".join(lines) + "\n"


def plot(cells: dict[tuple[str, str], list[list[dict]]], algos: list[str], out: Path) -> None:
    plt = pyplot()
    env_ids = sorted({env_id for env_id, _ in cells})
    figure, axes = panel_grid(len(env_ids))  # as the paper runner's plots
    for axis, env_id in zip(axes.ravel(), env_ids, strict=False):
        for algo in algos:
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
    parser.add_argument("--family", required=True, choices=list(FAMILIES))
    parser.add_argument("--envs", nargs="+", help="a subset of the family's envs")
    parser.add_argument("--algos", nargs="+", help="a subset of the family's algorithms")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, help="default: benchmarks/<family>")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument(
        "--timing",
        type=int,
        metavar="REPEATS",
        help="only time the algorithms: median seconds per iteration over REPEATS alternated iterations, into timing.md",
    )
    parser.add_argument("--iterations", type=int, help="override every env's iterations (smoke tests)")
    parser.add_argument("--n-steps", type=int, help="override every env's steps per env per rollout (smoke tests)")
    args = parser.parse_args()
    family = FAMILIES[args.family]
    for name, chosen, known in (("--envs", args.envs, family["envs"]), ("--algos", args.algos, family["algos"])):
        if unknown := sorted(set(chosen or []) - set(known)):
            parser.error(f"{name} {unknown} not in the {args.family} family: choose from {', '.join(known)}")
    out = args.out or Path("benchmarks") / args.family
    (out / "runs").mkdir(parents=True, exist_ok=True)
    if args.timing:
        text = timing(args.family, args.envs or list(family["envs"]), args.algos or list(family["algos"]), args.timing)
        (out / "timing.md").write_text(text)
        print(text)
        return
    if not args.report_only:
        runs = [(env_id, algo, seed) for env_id in args.envs or family["envs"] for algo in args.algos or family["algos"]
                for seed in args.seeds]  # fmt: skip
        overrides = {key: value for key, value in (("iterations", args.iterations), ("n_steps", args.n_steps)) if value}
        if args.iterations:
            overrides["eval_every"] = 1
        os.environ.setdefault("OMP_NUM_THREADS", "1")

        def csv_path(run: tuple[str, str, int]) -> Path:
            return out / "runs" / "{}__{}__seed{}.csv".format(*run)

        def keep(run: tuple[str, str, int], rows: list[dict]) -> None:
            write_csv(csv_path(run), rows)
            tqdm.write(f"{run[0]} {run[1]} seed {run[2]}: final {rows[-1]['eval_mean']:.1f}")

        # One process per run, so that each reports its own peak memory
        train = partial(train_and_evaluate, args.family, overrides=overrides)
        run_grid(runs, train, keep, lambda run: csv_path(run).exists(), args.jobs, "spawn")
    text = report(args.family, out)
    (out / "results.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
