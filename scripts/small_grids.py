"""
Small grids of sb3_gpg's algorithms beside their anchors in SB3 and sb3-contrib, with the same settings, seeds, budget
and evaluation; a finished run is not run again, and ``--report-only`` writes the tables and plots from the runs there.

- ``contrib --family maskable``: MaskableGPG (with its defaults, and with state binning) and MaskablePPO on
  sb3-contrib's three invalid-action envs and Gymnasium's Taxi (a small puzzle whose info gives the legal moves; without
  masks, illegal pick-ups and drop-offs cost 10 each). Evaluated with masks; the invalid actions taken in training are
  counted. ``--timing REPEATS`` only times the algorithms (``timing.md``).
- ``contrib --family recurrent``: RecurrentGPG and RecurrentPPO (each with its defaults for the critic: RecurrentPPO has
  a critic LSTM) on RL Zoo's partially observed CartPoleNoVel-v1 and PendulumNoVel-v1.
- ``mask-recurrent``: MaskableRecurrentGPG beside MaskablePPO on stacked frames and RecurrentPPO, on two tasks that need
  both a memory and action masks (``sb3_gpg.common.envs``; an invalid action ends the episode with -1): ``MaskedCue``
  (a cue at the first of 5 steps says which of two actions is right at the last; in between 2 of the 4 other actions
  are valid, drawn afresh) and ``MaskedTMaze`` (Bakker's T-maze with a corridor of 4 and walls as masks). MaskablePPO
  sees the last 4 observations (shorter than either task's memory); RecurrentPPO cannot take masks, so an invalid
  action ends its episode with -1, in evaluation as in training.
- ``tiny-budgets``: SB3's identity tests (tests/test_identity.py) and sb3-contrib's masked identity test
  (tests/test_invalid_actions.py::test_identity), each with its env, budget, settings and reward threshold, with the
  anchor (PPO, MaskablePPO) and with GPG (MaskableGPG) under its defaults and its options; evaluated as the test
  evaluates (``evaluate_policy``, 20 deterministic episodes on the training env, with masks on the masked env).

``contrib`` and ``mask-recurrent`` evaluate each run (deterministic, on its own evaluation seeds) after every
``eval_every`` iterations, in a process of its own that reports its peak resident memory, into
``runs/<env>__<algo>__seed<k>.csv``; then ``results.md`` (final and last-three evaluation, mean +- std over seeds;
seconds per iteration; invalid actions taken in training; policy parameters; rollout buffer and peak memory) and the
curves. ``tiny-budgets`` keeps one row per run in ``runs.csv`` and the command and commit in ``made_by.json``; then
``results.md`` (per env and setting: the evaluation over seeds, and how many seeds exceed the test's threshold).

    python scripts/small_grids.py contrib --family maskable --seeds 0 1 2 3 --jobs 2
    python scripts/small_grids.py contrib --family recurrent --report-only
    python scripts/small_grids.py contrib --family maskable --timing 10   # seconds per iteration, alternated
    python scripts/small_grids.py mask-recurrent --seeds 0 1 2 3 --jobs 2
    python scripts/small_grids.py mask-recurrent --seeds 0 --budget 1024 --out /tmp/mask_recurrent   # a smoke run
    python scripts/small_grids.py tiny-budgets --seeds 100 101 102 103 104
"""

import argparse
import json
import subprocess
import sys
import time
import warnings
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from sb3_contrib import MaskablePPO
from sb3_contrib.common.envs import InvalidActionEnvDiscrete
from stable_baselines3.common.callbacks import BaseCallback

from sb3_gpg import MaskableGPG
from sb3_gpg.common.maskable_recurrent.callbacks import MaskableRecurrentEvalCallback
from sb3_gpg_bench.contrib import evaluated_training, footprint, results_table, run_csv_grid
from sb3_gpg_bench.experiments import (
    EVAL_NORMALIZE,
    MaskablePeriodicEvaluation,
    PeriodicEvaluation,
    make_envs,
    panel_grid,
    plots,
    pyplot,
    read_csv,
    write_csv,
)
from sb3_gpg_bench.grid import run_grid
from sb3_gpg_bench.tiny_budgets import TINY_SETTINGS, TINY_TASKS, distinct_settings, tiny_report, train_tiny

EVAL_SEED_OFFSET = 10_000

# contrib. sb3-contrib's test settings for the invalid-action envs (gamma 0.4, rollouts of 2,048 samples, PPO's other
# defaults); Taxi: 8 envs x 256 steps, entropy bonus 0.01
INVALID = dict(n_envs=4, n_steps=512, batch_size=64, n_epochs=10, gamma=0.4, ent_coef=0.0, iterations=5, eval_every=1)
TAXI = dict(n_envs=8, n_steps=256, batch_size=256, n_epochs=10, gamma=0.99, ent_coef=0.01, iterations=100, eval_every=10)
# hyperparams/gpg_lstm.yml's entries (from RL Zoo's RecurrentPPO ones), with tanh activations (PyTorch's default) and,
# on CartPoleNoVel, without observation normalisation
LSTM_KWARGS = dict(lstm_hidden_size=64, ortho_init=False)
CARTPOLE_NOVEL = dict(n_envs=8, n_steps=256, batch_size=512, n_epochs=10, gamma=0.98, learning_rate=1e-3, iterations=50,
                      eval_every=5, policy_kwargs=dict(net_arch=[64], **LSTM_KWARGS))  # fmt: skip
# Pendulum with RL Zoo's observation and reward normalisation (VecNormalize), as its entry has it: rewards of -16 to 0 a
# step are left unscaled otherwise, and GPG then learns little
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
        # the paper's estimator (GPG's defaults when these ran), and state binning (the exact discrete state, with a
        # global fallback under 2 returns)
        algos={"gpg_mask": dict(baseline="bins"), "gpg_mask_state": dict(binning="state", min_bin_count=2), "ppo_mask": {}},
    ),
    "recurrent": dict(
        envs={"CartPoleNoVel-v1": CARTPOLE_NOVEL, "PendulumNoVel-v1": PENDULUM_NOVEL},
        algos={"gpg_lstm": dict(baseline="bins"), "ppo_lstm": {}},
    ),
}
CONTRIB_EVAL_EPISODES = 20

# mask-recurrent. MaskedCue: the learning test's settings (tests/test_gpg_mask_recurrent.py); the T-maze's episodes are
# longer (up to 16 steps), so its rollouts are too, so that each holds several episodes per env
CUE = dict(n_envs=8, n_steps=32, batch_size=256, budget=32_768, eval_every=4)
TMAZE = dict(n_envs=8, n_steps=128, batch_size=512, budget=131_072, eval_every=8)
MASK_RECURRENT_TASKS = {"MaskedCue": CUE, "MaskedTMaze": TMAZE}
SHARED = dict(n_epochs=4, learning_rate=1e-3, gamma=0.99)
LSTM = dict(lstm_hidden_size=32, net_arch=[32])
N_STACK = 4
MASK_RECURRENT_ALGOS = ("gpg_mask_lstm", "ppo_mask_stack", "ppo_lstm")
MASK_RECURRENT_EVAL_EPISODES = 50


# contrib
def make_contrib_env(env_id: str):
    import gymnasium as gym
    from sb3_contrib.common.envs import InvalidActionEnvMultiBinary, InvalidActionEnvMultiDiscrete

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


def build_contrib_model(family: str, env_id: str, algo: str, seed: int, overrides: dict | None = None):
    """:return: the algorithm on its training envs with the family's settings for the env, its iterations and eval period"""
    from sb3_contrib import RecurrentPPO

    from sb3_gpg import RecurrentGPG

    th.set_num_threads(1)
    settings = {**FAMILIES[family]["envs"][env_id], **(overrides or {})}
    n_envs, iterations, eval_every = settings.pop("n_envs"), settings.pop("iterations"), settings.pop("eval_every")
    normalize = {"gamma": settings["gamma"]} if settings.pop("normalize", False) else None
    env = make_envs(lambda: make_contrib_env(env_id), n_envs, seed, normalize=normalize)
    algorithm = {"gpg_lstm": RecurrentGPG, "ppo_lstm": RecurrentPPO, "ppo_mask": MaskablePPO}.get(algo, MaskableGPG)
    policy = "MlpLstmPolicy" if family == "recurrent" else "MlpPolicy"
    model = algorithm(policy, env, seed=seed, device="cpu", **settings, **FAMILIES[family]["algos"][algo])
    return model, iterations, eval_every


def train_contrib(family: str, env_id: str, algo: str, seed: int, overrides: dict | None = None) -> list[dict]:
    """One run, evaluated on its own evaluation seeds (with masks in the maskable family): one row per evaluation."""
    model, iterations, eval_every = build_contrib_model(family, env_id, algo, seed, overrides)
    env = model.get_env()
    # Evaluated on true rewards, with the training envs' observation statistics where they are normalised
    normalize = EVAL_NORMALIZE if model.get_vec_normalize_env() is not None else None
    eval_env = make_envs(lambda: make_contrib_env(env_id), 1, seed + EVAL_SEED_OFFSET, normalize=normalize)
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

    evaluation_class = MaskablePeriodicEvaluation if family == "maskable" else PeriodicEvaluation
    evaluation = evaluation_class(eval_env, eval_every, row, n_eval_episodes=CONTRIB_EVAL_EPISODES, warn=False)
    return evaluated_training(model, evaluation, iterations)


def contrib_timing(family: str, env_ids: list[str], algos: list[str], repeats: int) -> str:
    """
    Seconds per training iteration (rollout and update) of each algorithm, measured in this one process with the
    algorithms alternated (so that a change in the machine's load falls on all of them), after one warm-up iteration.

    :return: a Markdown table of the medians over ``repeats`` iterations
    """
    lines = ["| env | " + " | ".join(f"{algo} s / iter" for algo in algos) + " |", "|---" * (len(algos) + 1) + "|"]
    for env_id in env_ids:
        models = {algo: build_contrib_model(family, env_id, algo, seed=0)[0] for algo in algos}
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


def contrib_report(family: str, out: Path) -> str:
    algos = list(FAMILIES[family]["algos"])
    key = dict(
        evaluation=f"Deterministic evaluation{' with masks' if family == 'maskable' else ''}, {CONTRIB_EVAL_EPISODES} "
        "episodes on separate seeds",
        invalid="invalid actions taken in training",
        threads="one torch thread, two runs at a time on 2 cores",
    )
    table, found = results_table(out, algos, ["env", "algo", "n"],
                                 lambda env_id, algo, runs: (f"{env_id} | {algo} | {len(runs)}", ("invalid_actions", 1, 2)),
                                 key)  # fmt: skip
    contrib_plot(dict(found), algos, out)
    return "\n".join([f"# {family}: sb3_gpg beside sb3-contrib", "", *table]) + "\n"


def contrib_plot(cells: dict[tuple[str, str], list[list[dict]]], algos: list[str], out: Path) -> None:
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


def contrib(args: argparse.Namespace, parser: argparse.ArgumentParser) -> str:
    family = FAMILIES[args.family]
    for name, chosen, known in (("--envs", args.envs, family["envs"]), ("--algos", args.algos, family["algos"])):
        if unknown := sorted(set(chosen or []) - set(known)):
            parser.error(f"{name} {unknown} not in the {args.family} family: choose from {', '.join(known)}")
    out = args.out or Path("benchmarks") / args.family
    (out / "runs").mkdir(parents=True, exist_ok=True)
    if args.timing:
        text = contrib_timing(args.family, args.envs or list(family["envs"]), args.algos or list(family["algos"]), args.timing)
        (out / "timing.md").write_text(text)
        return text
    if not args.report_only:
        runs = [(env_id, algo, seed) for env_id in args.envs or family["envs"] for algo in args.algos or family["algos"]
                for seed in args.seeds]  # fmt: skip
        overrides = {key: value for key, value in (("iterations", args.iterations), ("n_steps", args.n_steps)) if value}
        if args.iterations:
            overrides["eval_every"] = 1
        run_csv_grid(runs, partial(train_contrib, args.family, overrides=overrides), out, args.jobs, digits=1)
    text = contrib_report(args.family, out)
    (out / "results.md").write_text(text)
    return text


# mask-recurrent
class InvalidActionCount(BaseCallback):
    """Counts the training episodes that an invalid action ended (the tasks' info says so)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def _on_step(self) -> bool:
        self.count += sum(bool(info.get("invalid_action")) for info in self.locals["infos"])
        return True


class MaskableRecurrentPeriodicEvaluation(PeriodicEvaluation, MaskableRecurrentEvalCallback):
    """PeriodicEvaluation under action masks, with the LSTM states carried (MaskableRecurrentEvalCallback's)."""


def make_task_envs(task: str, n_envs: int, seed: int, algo: str):
    """:return: the task's envs, the last ``N_STACK`` observations stacked for MaskablePPO"""
    from stable_baselines3.common.vec_env import VecFrameStack

    from sb3_gpg.common.envs import MaskedCueEnv, MaskedTMazeEnv

    envs = make_envs({"MaskedCue": MaskedCueEnv, "MaskedTMaze": MaskedTMazeEnv}[task], n_envs, seed)
    return VecFrameStack(envs, N_STACK) if algo == "ppo_mask_stack" else envs


def build_mask_recurrent_model(task: str, algo: str, seed: int):
    from sb3_contrib import RecurrentPPO

    from sb3_gpg import MaskableRecurrentGPG

    th.set_num_threads(1)
    settings = MASK_RECURRENT_TASKS[task]
    env = make_task_envs(task, settings["n_envs"], seed, algo)
    kwargs = dict(n_steps=settings["n_steps"], batch_size=settings["batch_size"], seed=seed, device="cpu", **SHARED)
    if algo == "ppo_mask_stack":
        return MaskablePPO("MlpPolicy", env, policy_kwargs=dict(net_arch=[64, 64]), **kwargs)
    if algo == "gpg_mask_lstm":  # the paper's estimator, GPG's default when these ran
        return MaskableRecurrentGPG("MlpLstmPolicy", env, policy_kwargs=LSTM, baseline="bins", **kwargs)
    return RecurrentPPO("MlpLstmPolicy", env, policy_kwargs=LSTM, **kwargs)


def train_mask_recurrent(task: str, algo: str, seed: int, budget: int | None, eval_every: int | None) -> list[dict]:
    """One run, every evaluation of every algorithm on the same episodes: one row per evaluation."""
    model = build_mask_recurrent_model(task, algo, seed)
    settings = MASK_RECURRENT_TASKS[task]
    iterations = -(-(budget or settings["budget"]) // (model.n_steps * model.n_envs))
    eval_seed = seed + EVAL_SEED_OFFSET
    invalid = InvalidActionCount()

    def row(evaluation: PeriodicEvaluation) -> dict[str, Any]:
        return dict(
            env=task, algo=algo, n_envs=model.n_envs, seed=seed, iteration=evaluation.iteration,
            env_steps=model.num_timesteps, train_seconds=round(evaluation.training_seconds, 2),
            eval_mean=evaluation.last_mean_reward, invalid_episodes=invalid.count, **footprint(model, buffer_digits=3),
        )  # fmt: skip

    evaluation_class = {"gpg_mask_lstm": MaskableRecurrentPeriodicEvaluation, "ppo_mask_stack": MaskablePeriodicEvaluation,
                        "ppo_lstm": PeriodicEvaluation}[algo]  # fmt: skip
    evaluation = evaluation_class(make_task_envs(task, 1, eval_seed, algo), eval_every or settings["eval_every"], row,
                                  eval_seed=eval_seed, n_eval_episodes=MASK_RECURRENT_EVAL_EPISODES, warn=False)  # fmt: skip
    return evaluated_training(model, evaluation, iterations, [invalid])


def mask_recurrent_report(out: Path) -> str:
    key = dict(
        evaluation=f"Deterministic evaluation, the same {MASK_RECURRENT_EVAL_EPISODES} episodes each time, on separate "
        "seeds (scores from -1 to 1; without memory 0 on average)",
        invalid="training episodes an invalid action ended",
    )
    table, found = results_table(out, MASK_RECURRENT_ALGOS, ["task", "algo", "n", "env steps"],
                                 lambda task, algo, runs: (f"{task} | {algo} | {len(runs)} | {runs[0][-1]['env_steps']}",
                                                           ("invalid_episodes", 2, 3)), key)  # fmt: skip
    plots([row for _, runs in found for rows in runs for row in rows], out)
    return "\n".join([
        "# MaskableRecurrentGPG beside MaskablePPO on stacked frames and RecurrentPPO",
        "",
        "Settings shared by the three: " + ", ".join(f"{key} {value}" for key, value in SHARED.items()) + "; MaskedCue "
        f"{CUE['n_envs']} envs x {CUE['n_steps']} steps, minibatch {CUE['batch_size']}; MaskedTMaze {TMAZE['n_envs']} "
        f"envs x {TMAZE['n_steps']} steps, minibatch {TMAZE['batch_size']}. The recurrent ones: an LSTM of "
        f"{LSTM['lstm_hidden_size']}, then {LSTM['net_arch']} (RecurrentPPO with its critic LSTM, as by default); "
        f"MaskablePPO: {N_STACK} stacked observations, [64, 64].",
        "",
        *table,
    ]) + "\n"  # fmt: skip


def mask_recurrent(args: argparse.Namespace, parser: argparse.ArgumentParser) -> str:
    out = args.out or Path("benchmarks") / "mask_recurrent"
    (out / "runs").mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        runs = [(task, algo, seed) for task in args.tasks for algo in args.algos for seed in args.seeds]
        train = partial(train_mask_recurrent, budget=args.budget, eval_every=args.eval_every)
        run_csv_grid(runs, train, out, args.jobs, digits=2)
    text = mask_recurrent_report(out)
    (out / "results.md").write_text(text)
    return text


# tiny-budgets: its tasks, settings, training and report are in sb3_gpg_bench.tiny_budgets
def tiny_budgets(args: argparse.Namespace, parser: argparse.ArgumentParser) -> str:
    out = args.out or Path("benchmarks") / "tiny_budgets"
    if not args.report_only:
        out.mkdir(parents=True, exist_ok=True)
        grid = [(env_name, setting, seed) for env_name in args.envs
                for setting in distinct_settings(TINY_TASKS[env_name], args.settings) for seed in args.seeds]  # fmt: skip
        path = out / "runs.csv"
        rows = [dict(row) for row in read_csv(path)] if path.exists() else []
        done = {(row["env"], row["setting"], int(row["seed"])) for row in rows}
        commit = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True).stdout.strip()
        command = " ".join(["python", "scripts/small_grids.py", *sys.argv[1:]])
        (out / "made_by.json").write_text(json.dumps({"command": command, "commit": commit}, indent=1) + "\n")
        # GPG's warnings (no group signal in 256-step rollouts of 100-step episodes) are what this grid measures
        warnings.filterwarnings("ignore", category=UserWarning)
        th.set_num_threads(1)

        def keep(run: tuple[str, str, int], row: dict[str, Any]) -> None:
            rows.append(row)
            write_csv(path, rows)

        run_grid(grid, train_tiny, keep, lambda run: run in done, args.jobs, "thread")
    text = tiny_report(out)
    (out / "results.md").write_text(text)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    shared = argparse.ArgumentParser(add_help=False)
    shared.add_argument("--out", type=Path, help="default: benchmarks/<family or grid>")
    shared.add_argument("--report-only", action="store_true", help="only the tables and plots, from the runs there")
    shared.add_argument("--jobs", type=int, default=2, help="runs at once")
    grid = commands.add_parser("contrib", parents=[shared], help="MaskableGPG, RecurrentGPG beside sb3-contrib's")
    grid.add_argument("--family", required=True, choices=list(FAMILIES))
    grid.add_argument("--envs", nargs="+", help="a subset of the family's envs")
    grid.add_argument("--algos", nargs="+", help="a subset of the family's algorithms")
    grid.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3])
    grid.add_argument("--timing", type=int, metavar="REPEATS",
                      help="only time the algorithms: median seconds per iteration over REPEATS alternated iterations, "
                      "into timing.md")  # fmt: skip
    grid.add_argument("--iterations", type=int, help="override every env's iterations (smoke tests)")
    grid.add_argument("--n-steps", type=int, help="override every env's steps per env per rollout (smoke tests)")
    grid.set_defaults(grid=contrib)
    grid = commands.add_parser("mask-recurrent", parents=[shared], help="MaskableRecurrentGPG beside sb3-contrib's")
    grid.add_argument("--tasks", nargs="+", choices=list(MASK_RECURRENT_TASKS), default=list(MASK_RECURRENT_TASKS))
    grid.add_argument("--algos", nargs="+", choices=MASK_RECURRENT_ALGOS, default=list(MASK_RECURRENT_ALGOS))
    grid.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3])
    grid.add_argument("--budget", type=int, help="env steps per run, for every task (default: each task's own)")
    grid.add_argument("--eval-every", type=int, help="iterations between evaluations (default: each task's own)")
    grid.set_defaults(grid=mask_recurrent)
    grid = commands.add_parser("tiny-budgets", parents=[shared], help="SB3's and sb3-contrib's identity tests")
    grid.add_argument("--seeds", type=int, nargs="+", default=[100, 101, 102, 103, 104], help="tuning seeds are >= 100")
    grid.add_argument("--envs", nargs="+", choices=list(TINY_TASKS), default=list(TINY_TASKS))
    grid.add_argument("--settings", nargs="+", choices=list(TINY_SETTINGS), default=list(TINY_SETTINGS))
    grid.set_defaults(grid=tiny_budgets, jobs=1)
    args = parser.parse_args()
    if args.jobs < 1:
        parser.error(f"--jobs {args.jobs}: at least one run at a time")
    print(args.grid(args, parser))


if __name__ == "__main__":
    main()
