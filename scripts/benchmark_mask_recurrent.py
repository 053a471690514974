"""
MaskableRecurrentGPG beside MaskablePPO on stacked frames and RecurrentPPO, on two tasks that need both a memory and
action masks (``sb3_gpg.common.envs``; an invalid action ends the episode with -1):

- ``MaskedCue``: a cue shown at the first of 5 steps says which of two actions is right at the last (+1, else -1); at
  each step in between 2 of the 4 other actions are valid, drawn afresh.
- ``MaskedTMaze``: Bakker's T-maze with a corridor of 4 and walls as masks: the cue at the start says which way to
  turn at the junction.

The three share the settings (envs, steps per rollout, minibatch, epochs, learning rate, discount) and the evaluation
(deterministic, on separate seeds, after every ``eval_every`` iterations): MaskableRecurrentGPG with masks and LSTM
states (``MaskableRecurrentEvalCallback``), MaskablePPO with masks on the last 4 observations (``VecFrameStack``, in
training and evaluation: shorter than either task's memory), RecurrentPPO with LSTM states and without masks, which it
cannot take (an invalid action ends its episode with -1, in evaluation as in training). Each run trains in its own
process, which reports its peak resident memory. Writes into --out (default benchmarks/mask_recurrent):
runs/<task>__<algo>__seed<k>.csv (finished runs are not run again), results.md (final and last-three evaluation, mean
+- std over seeds; seconds per iteration; invalid actions taken in training; policy parameters; rollout buffer and peak
memory) and the curves, <task>_iterations.png and <task>_steps.png.

    python scripts/benchmark_mask_recurrent.py --seeds 0 1 2 3 --jobs 2
    python scripts/benchmark_mask_recurrent.py --seeds 0 --budget 1024 --out /tmp/mask_recurrent   # a smoke run
"""

import argparse
import os
from functools import partial
from pathlib import Path
from typing import Any

from stable_baselines3.common.callbacks import BaseCallback
from tqdm import tqdm

from sb3_gpg.common.envs import MaskedCueEnv, MaskedTMazeEnv
from sb3_gpg.common.maskable_recurrent.callbacks import MaskableRecurrentEvalCallback
from sb3_gpg_bench.contrib import cell_row, cells, footprint, table_head, table_key
from sb3_gpg_bench.experiments import (
    MaskablePeriodicEvaluation,
    PeriodicEvaluation,
    make_envs,
    plots,
    write_csv,
)
from sb3_gpg_bench.grid import run_grid

# MaskedCue: the learning test's settings (tests/test_gpg_mask_recurrent.py); the T-maze's episodes are longer (up to
# 16 steps), so its rollouts are too, so that each holds several episodes per env
CUE = dict(make_env=MaskedCueEnv, n_envs=8, n_steps=32, batch_size=256, budget=32_768, eval_every=4)
TMAZE = dict(make_env=MaskedTMazeEnv, n_envs=8, n_steps=128, batch_size=512, budget=131_072, eval_every=8)
TASKS = {"MaskedCue": CUE, "MaskedTMaze": TMAZE}
SHARED = dict(n_epochs=4, learning_rate=1e-3, gamma=0.99)
LSTM = dict(lstm_hidden_size=32, net_arch=[32])
N_STACK = 4
ALGOS = ("gpg_mask_lstm", "ppo_mask_stack", "ppo_lstm")
EVAL_EPISODES = 50
EVAL_SEED_OFFSET = 10_000


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
    """
    :return: the task's envs, the last ``N_STACK`` observations stacked for MaskablePPO
    """
    from stable_baselines3.common.vec_env import VecFrameStack

    envs = make_envs(TASKS[task]["make_env"], n_envs, seed)
    return VecFrameStack(envs, N_STACK) if algo == "ppo_mask_stack" else envs


def build_model(task: str, algo: str, seed: int):
    import torch as th
    from sb3_contrib import MaskablePPO, RecurrentPPO

    from sb3_gpg import MaskableRecurrentGPG

    th.set_num_threads(1)
    settings = TASKS[task]
    env = make_task_envs(task, settings["n_envs"], seed, algo)
    kwargs = dict(n_steps=settings["n_steps"], batch_size=settings["batch_size"], seed=seed, device="cpu", **SHARED)
    if algo == "ppo_mask_stack":
        return MaskablePPO("MlpPolicy", env, policy_kwargs=dict(net_arch=[64, 64]), **kwargs)
    algorithm = MaskableRecurrentGPG if algo == "gpg_mask_lstm" else RecurrentPPO
    return algorithm("MlpLstmPolicy", env, policy_kwargs=LSTM, **kwargs)


def train_and_evaluate(task: str, algo: str, seed: int, budget: int | None, eval_every: int | None) -> list[dict]:
    """
    One run: train in one learn() call, evaluating after every ``eval_every`` iterations and after the last.

    :return: one row per evaluation
    """
    model = build_model(task, algo, seed)
    settings = TASKS[task]
    iterations = -(-(budget or settings["budget"]) // (model.n_steps * model.n_envs))
    eval_seed = seed + EVAL_SEED_OFFSET
    eval_env = make_task_envs(task, 1, eval_seed, algo)
    invalid = InvalidActionCount()

    def row(evaluation: PeriodicEvaluation) -> dict[str, Any]:
        return dict(
            env=task, algo=algo, n_envs=model.n_envs, seed=seed, iteration=evaluation.iteration,
            env_steps=model.num_timesteps, train_seconds=round(evaluation.training_seconds, 2),
            eval_mean=evaluation.last_mean_reward, invalid_episodes=invalid.count, **footprint(model, buffer_digits=3),
        )  # fmt: skip

    evaluation_class = {
        "gpg_mask_lstm": MaskableRecurrentPeriodicEvaluation,
        "ppo_mask_stack": MaskablePeriodicEvaluation,
        "ppo_lstm": PeriodicEvaluation,
    }[algo]
    # Every evaluation of every algorithm plays the same episodes
    every = eval_every or settings["eval_every"]
    evaluation = evaluation_class(eval_env, every, row, eval_seed=eval_seed, n_eval_episodes=EVAL_EPISODES, warn=False)
    model.learn(iterations * model.n_steps * model.n_envs, callback=[evaluation, invalid])
    evaluation.evaluate()  # the last iteration's: no rollout starts after it
    return evaluation.rows


def report(out: Path) -> str:
    lines = [
        "# MaskableRecurrentGPG beside MaskablePPO on stacked frames and RecurrentPPO",
        "",
        "Settings shared by the three: " + ", ".join(f"{key} {value}" for key, value in SHARED.items()) + "; MaskedCue "
        f"{CUE['n_envs']} envs x {CUE['n_steps']} steps, minibatch {CUE['batch_size']}; MaskedTMaze {TMAZE['n_envs']} "
        f"envs x {TMAZE['n_steps']} steps, minibatch {TMAZE['batch_size']}. The recurrent ones: an LSTM of "
        f"{LSTM['lstm_hidden_size']}, then {LSTM['net_arch']} (RecurrentPPO with its critic LSTM, as by default); "
        f"MaskablePPO: {N_STACK} stacked observations, [64, 64].",
        "",
        table_key(
            f"Deterministic evaluation, the same {EVAL_EPISODES} episodes each time, on separate seeds (scores from -1 to "
            "1; without memory 0 on average)",
            "training episodes an invalid action ended",
        ),
        "",
        *table_head(["task", "algo", "n", "env steps"]),
    ]
    found = cells(out / "runs", ALGOS)
    for (task, algo), cell_runs in found:
        steps = cell_runs[0][-1]["env_steps"]
        lines.append(f"| {task} | {algo} | {len(cell_runs)} | {steps} | {cell_row(cell_runs, 'invalid_episodes', 2, 3)} |")
    plots([row for _, runs in found for rows in runs for row in rows], out)
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", choices=list(TASKS), default=list(TASKS))
    parser.add_argument("--algos", nargs="+", choices=ALGOS, default=list(ALGOS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3])
    parser.add_argument("--budget", type=int, help="env steps per run, for every task (default: each task's own)")
    parser.add_argument("--eval-every", type=int, help="iterations between evaluations (default: each task's own)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("benchmarks") / "mask_recurrent")
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    (args.out / "runs").mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        runs = [(task, algo, seed) for task in args.tasks for algo in args.algos for seed in args.seeds]
        os.environ.setdefault("OMP_NUM_THREADS", "1")

        def csv_path(run: tuple[str, str, int]) -> Path:
            return args.out / "runs" / "{}__{}__seed{}.csv".format(*run)

        def keep(run: tuple[str, str, int], rows: list[dict]) -> None:
            write_csv(csv_path(run), rows)
            tqdm.write(f"{run[0]} {run[1]} seed {run[2]}: final {rows[-1]['eval_mean']:.2f}")

        # One process per run, so that each reports its own peak memory
        train = partial(train_and_evaluate, budget=args.budget, eval_every=args.eval_every)
        run_grid(runs, train, keep, lambda run: csv_path(run).exists(), args.jobs, "spawn")
    text = report(args.out)
    (args.out / "results.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
