"""
Speed and memory of GPG against PPO on the same work, and against the environment alone.

For each configuration (env, n_envs, binning, VecEnv) both algorithms run the same rollout size (n_steps per env),
minibatch size (a quarter of the rollout), epochs and network, on the same VecEnv: DummyVecEnv (``dummy``),
SubprocVecEnv (``subproc``, one process per env) or EnvPool's C++ envs (``envpool``, one C++ thread, so one core as
DummyVecEnv; ``envpool2``, ``envpool4``, ...: that many C++ threads). Iterations of GPG and PPO alternate, after one
warm-up iteration each, and each iteration is split into rollout collection, advantage computation and policy update.
The floor is the bare VecEnv stepping the same number of steps with fixed actions: no learner can collect a rollout
faster. Medians over the repeats are reported, with GPG/PPO ratios. Memory is measured in a fresh subprocess per
algorithm (peak RSS after `--peak-iterations` iterations; exact sizes of the learner's state and of the rollout
buffer).

Run from the repository root:

    python scripts/benchmark_speed.py --output benchmarks/speed.md
    python scripts/benchmark_speed.py --profile LunarLander-v3:128:time:envpool   # where one GPG iteration's time goes
    python scripts/benchmark_speed.py --configs LunarLander-v3:128:time:dummy LunarLander-v3:128:time:envpool2 \
        --output benchmarks/speed_envpool_threads.md   # EnvPool on every core of this machine
    python scripts/benchmark_speed.py --estimator --output benchmarks/speed_estimator.md  # the estimator's options alone
    python scripts/benchmark_speed.py --estimator --shapes BipedalWalker-v3:32:2048:24  # on another entry's rollouts

``--estimator`` times the advantage estimation alone (``sb3_gpg.estimator.estimate``) on random rollouts of the MuJoCo
entries' shapes (or ``--shapes``), for the fitted baselines' options: the CPU time of one rollout's estimate
(``time.process_time``, which other processes on the machine barely move), the median over the repeats, with the memory
already full.
"""

import argparse
import cProfile
import io
import json
import multiprocessing
import os
import platform
import pstats
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import stable_baselines3
import torch as th
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import VecEnv
from tqdm import tqdm

import sb3_gpg
from sb3_gpg import GPG
from sb3_gpg.estimator import GroupOptions, estimate
from sb3_gpg.estimator.baseline_memory import BaselineMemory
from sb3_gpg.estimator.fitted_baselines import remembered_rollouts
from sb3_gpg_bench.experiments import make_envs

# (env id, n_envs, binning, VecEnv): every backend at 16 envs; DummyVecEnv against EnvPool at 128 and 1,024 envs
# (SubprocVecEnv starts one process per env, so 128 or 1,024 of them do not fit a 2-core machine), and EnvPool with two
# C++ threads; the binnings at 128
BACKENDS = ("dummy", "subproc", "envpool")
IN_PROCESS = ("dummy", "envpool")
DEFAULT_CONFIGS = [
    # The DummyVecEnv grid's small and middle groups (GPG against PPO where the update weighs most)
    *[(env, n, "time", "dummy") for env, n in (("CartPole-v1", 1), ("CartPole-v1", 64), ("LunarLander-v3", 1))],
    *[(env, 16, "time", vec_env) for env in ("CartPole-v1", "LunarLander-v3", "HalfCheetah-v5") for vec_env in BACKENDS],
    *[(env, n, "time", vec_env) for env in ("CartPole-v1", "LunarLander-v3") for n in (128, 1024) for vec_env in IN_PROCESS],
    *[("HalfCheetah-v5", 128, "time", vec_env) for vec_env in IN_PROCESS],
    # EnvPool on both cores of this machine, where the env is the largest part of the iteration
    *[(env, n, "time", "envpool2") for env, n in (("LunarLander-v3", 128), ("CartPole-v1", 1024), ("HalfCheetah-v5", 128))],
    *[("LunarLander-v3", 128, b, "envpool") for b in ("rollout_step", "universal", "spatial", "spatial_time")],
    ("CliffWalking-v1", 128, "state", "envpool"),
]  # fmt: skip
N_STEPS = {"HalfCheetah-v5": 256}  # MuJoCo steps are slow: a shorter rollout keeps the grid within minutes
PHASES = ("rollout", "advantage", "update")


def make_env(env_id: str, n_envs: int, seed: int, vec_env: str) -> VecEnv:
    """:param vec_env: ``dummy``, ``subproc``, ``envpool`` (one C++ thread) or ``envpoolN`` (N C++ threads)"""
    threads = int(vec_env.removeprefix("envpool") or 1) if vec_env.startswith("envpool") else 0
    return make_envs(env_id, n_envs, seed, vec_env.rstrip("0123456789"), num_threads=threads)


def make_model(algo: str, env_id: str, n_envs: int, binning: str, vec_env: str, n_steps: int, n_epochs: int, seed: int):
    env = make_env(env_id, n_envs, seed, vec_env)
    kwargs = dict(n_steps=n_steps, batch_size=max(n_steps * n_envs // 4, 2), n_epochs=n_epochs, seed=seed, device="cpu")
    if algo == "gpg" and binning == "default":
        return GPG("MlpPolicy", env, **kwargs)  # the constructor's estimator, as a one-word swap gets it
    if algo == "gpg":
        binning, _, baseline = binning.partition("+")  # e.g. time+knn: time bins, fitted knn baseline
        return GPG("MlpPolicy", env, binning=binning, bin_size=0.5, baseline=baseline or "bins", **kwargs)
    return PPO("MlpPolicy", env, **kwargs)


class PhaseTimer:
    """Wraps a model's collect_rollouts, compute_returns_and_advantage and train to time each phase of an iteration."""

    def __init__(self, model):
        self.model = model
        self.times: dict[str, list[float]] = {phase: [] for phase in PHASES}
        collect, train = model.collect_rollouts, model.train
        compute = model.rollout_buffer.compute_returns_and_advantage

        def timed_compute(*args, **kwargs):
            start = time.perf_counter()
            compute(*args, **kwargs)
            self._advantage = time.perf_counter() - start

        def timed_collect(*args, **kwargs):
            start = time.perf_counter()
            result = collect(*args, **kwargs)
            self.times["rollout"].append(time.perf_counter() - start - self._advantage)
            self.times["advantage"].append(self._advantage)
            return result

        def timed_train():
            start = time.perf_counter()
            train()
            self.times["update"].append(time.perf_counter() - start)

        model.rollout_buffer.compute_returns_and_advantage = timed_compute
        model.collect_rollouts = timed_collect
        model.train = timed_train

    def iterate(self) -> None:
        model = self.model
        model.learn(model.n_steps * model.n_envs, reset_num_timesteps=False)


def time_alternately(models: dict[str, Any], repeats: int) -> dict[str, float]:
    """
    Time the models' iterations: one warm-up iteration each, then ``repeats`` each, alternating, so that all see the same
    machine noise.

    :param models: the models by algorithm name
    :param repeats: the timed iterations of each model
    :return: per algorithm, the median of each phase (``{algo}_{phase}``) and of the whole iteration (``{algo}_iteration``)
    """
    timers = {algo: PhaseTimer(model) for algo, model in models.items()}
    for timer in timers.values():  # warm-up
        timer.iterate()
        for phase in PHASES:
            timer.times[phase].clear()
    for _ in range(repeats):
        for timer in timers.values():
            timer.iterate()
    medians = {}
    for algo, timer in timers.items():
        for phase in PHASES:
            medians[f"{algo}_{phase}"] = statistics.median(timer.times[phase])
        iterations = [sum(values) for values in zip(*(timer.times[phase] for phase in PHASES), strict=True)]
        medians[f"{algo}_iteration"] = statistics.median(iterations)
    return medians


def floor_time(env_id: str, n_envs: int, vec_env: str, n_steps: int, seed: int, repeats: int) -> float:
    """Median time for the bare VecEnv to step n_steps with fixed actions (the same action for every env)."""
    env = make_env(env_id, n_envs, seed, vec_env)
    actions = np.stack([env.action_space.sample()] * n_envs)
    env.reset()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(n_steps):
            env.step(actions)
        times.append(time.perf_counter() - start)
    env.close()
    return statistics.median(times)


def memory_probe(
    algo: str, env_id: str, n_envs: int, binning: str, vec_env: str, n_steps: int, n_epochs: int, iterations: int
) -> dict[str, float]:
    """
    Build the model and train it ``iterations`` iterations, in the fresh process of ``peak_memory``.

    :return: the process's peak resident memory, and the sizes of the learner's state and of the rollout buffer (MiB)
    """
    th.set_num_threads(1)
    model = make_model(algo, env_id, n_envs, binning, vec_env, n_steps, n_epochs, 0)
    model.learn(iterations * model.n_steps * model.n_envs)
    buffer = model.rollout_buffer
    arrays = [value for value in vars(buffer).values() if hasattr(value, "nbytes")]
    if isinstance(buffer.observations, dict):
        arrays += list(buffer.observations.values())
    with open("/proc/self/status") as status:
        # VmHWM, not getrusage's ru_maxrss: on Linux a child started from this process inherits ru_maxrss, so it
        # reported the benchmark process's own peak instead
        peak_kib = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    return dict(
        peak_mib=peak_kib / 1024,
        learner_mib=4 * sum(p.numel() * p.element_size() for p in model.policy.parameters()) / 2**20,
        buffer_mib=sum(a.nbytes for a in arrays) / 2**20,
    )


def peak_memory(*config: Any) -> dict[str, float]:
    """
    Memory of a fresh process that builds the model and trains it (``memory_probe``'s arguments): its peak resident
    memory (torch's runtime included), and, exactly, the bytes of the learner's state (parameters, gradients, Adam's two
    moments) and of the rollout buffer's arrays.
    """
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(memory_probe, *config).result()


def benchmark(env_id: str, n_envs: int, binning: str, vec_env: str, args: argparse.Namespace) -> dict:
    n_steps = args.n_steps or N_STEPS.get(env_id, 128)
    models = {
        algo: make_model(algo, env_id, n_envs, binning, vec_env, n_steps, args.n_epochs, args.seed) for algo in ("gpg", "ppo")
    }
    result = {"env": env_id, "n_envs": n_envs, "binning": binning, "vec_env": vec_env, "n_steps": n_steps}
    result.update(time_alternately(models, args.repeats))
    for algo, model in models.items():
        result[f"{algo}_params"] = sum(p.numel() for p in model.policy.parameters())
    for model in models.values():
        model.env.close()
    result["floor"] = floor_time(env_id, n_envs, vec_env, n_steps, args.seed, args.repeats)
    if args.peak_iterations > 0:
        for algo in ("gpg", "ppo"):
            memory = peak_memory(algo, env_id, n_envs, binning, vec_env, n_steps, args.n_epochs, args.peak_iterations)
            result.update({f"{algo}_{key}": value for key, value in memory.items()})
    return result


def parse_config(config: str) -> tuple[str, int, str, str]:
    env_id, n_envs, binning, *vec_env = config.split(":")
    name = vec_env[0] if vec_env else "dummy"
    if name not in BACKENDS and not (name.startswith("envpool") and name.removeprefix("envpool").isdigit()):
        raise SystemExit(f"Unknown vec env {name!r} in {config!r}: dummy, subproc, envpool or envpoolN (N C++ threads).")
    return env_id, int(n_envs), binning, name


def profile(config: str, args: argparse.Namespace, top: int = 25) -> str:
    """cProfile of ``args.repeats`` GPG iterations after a warm-up: the functions with the most own time, and the total."""
    env_id, n_envs, binning, vec_env = parse_config(config)
    n_steps = args.n_steps or N_STEPS.get(env_id, 128)
    model = make_model("gpg", env_id, n_envs, binning, vec_env, n_steps, args.n_epochs, args.seed)
    model.learn(model.n_steps * model.n_envs)
    profiler = cProfile.Profile()
    profiler.enable()
    model.learn(args.repeats * model.n_steps * model.n_envs, reset_num_timesteps=False)
    profiler.disable()
    stream = io.StringIO()
    pstats.Stats(profiler, stream=stream).sort_stats("tottime").print_stats(top)
    return f"GPG, {config}, {args.repeats} iterations:\n{stream.getvalue()}"


def _machine() -> str:
    return (
        f"Machine: {platform.processor() or platform.machine()}, {th.get_num_threads()} torch thread(s), "
        f"Python {platform.python_version()}, NumPy {np.__version__}, torch {th.__version__}, SB3 "
        f"{stable_baselines3.__version__}, sb3_gpg {sb3_gpg.__version__}."
    )


def markdown(results: list[dict], args: argparse.Namespace, wall_time: float, loads: tuple[float, float]) -> str:
    lines = [
        "# Speed and memory: GPG against PPO and against the bare environment",
        "",
        f"Command: `python scripts/benchmark_speed.py {' '.join(sys.argv[1:])}`",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {th.get_num_threads()} torch thread(s), "
        f"Python {platform.python_version()}, torch {th.__version__}, SB3 {stable_baselines3.__version__}, "
        f"sb3_gpg {sb3_gpg.__version__}. {args.repeats} alternating iterations per algorithm after one warm-up; "
        f"medians. Both use n_epochs={args.n_epochs}, batch_size = a quarter of the rollout, SB3's default 64-64 "
        f"MlpPolicy, the same VecEnv (*vec env*: DummyVecEnv, SubprocVecEnv with one process per env, or EnvPool with "
        f"one C++ thread; envpoolN: N threads). Total wall time {wall_time:.0f} s; the machine's load average (1 min) "
        f"{loads[0]:.1f} at the start, {loads[1]:.1f} at the end (GPG's and PPO's iterations alternate: both ran under "
        "it).",
        "",
        "Times are seconds per iteration (one rollout of n_steps x n_envs samples plus the update). *floor*: the bare "
        "VecEnv stepping the same number of steps with fixed actions. *vs floor*: GPG's iteration over the floor. "
        "*adv. share*: advantage computation as a share of GPG's iteration.",
        "",
        "| env | n_envs | binning | vec env | n_steps | GPG iter | PPO iter | iter ratio | GPG update | PPO update "
        "| update ratio | GPG rollout | PPO rollout | GPG adv. | PPO adv. | adv. share | floor | vs floor |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['env']} | {r['n_envs']} | {r['binning']} | {r['vec_env']} | {r['n_steps']} | {r['gpg_iteration']:.3f} | "
            f"{r['ppo_iteration']:.3f} | **{r['gpg_iteration'] / r['ppo_iteration']:.2f}** | {r['gpg_update']:.3f} | "
            f"{r['ppo_update']:.3f} | **{r['gpg_update'] / r['ppo_update']:.2f}** | {r['gpg_rollout']:.3f} | "
            f"{r['ppo_rollout']:.3f} | {r['gpg_advantage'] * 1e3:.1f} ms | {r['ppo_advantage'] * 1e3:.1f} ms | "
            f"{r['gpg_advantage'] / r['gpg_iteration']:.1%} | {r['floor']:.3f} | {r['gpg_iteration'] / r['floor']:.2f}x |"
        )
    lines += [
        "",
        "Memory: *learner* is the exact size of parameters, gradients and Adam's two moments; *buffer* the rollout "
        "buffer's arrays (GPG's include the episode times); *peak* the peak resident memory of a fresh process that "
        f"builds the model and trains {args.peak_iterations} iteration(s), torch's runtime and the envs included.",
        "",
        "| env | n_envs | vec env | GPG params | PPO params | params ratio | GPG learner | PPO learner | GPG buffer "
        "| PPO buffer | GPG peak | PPO peak |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    seen = set()
    for r in results:
        if (r["env"], r["n_envs"], r["vec_env"]) in seen:
            continue
        seen.add((r["env"], r["n_envs"], r["vec_env"]))
        memory = " | ".join(
            f"{r[f'{algo}_{key}']:.2f} MiB" if f"{algo}_{key}" in r else "not measured"
            for key in ("learner_mib", "buffer_mib", "peak_mib")
            for algo in ("gpg", "ppo")
        )
        lines.append(
            f"| {r['env']} | {r['n_envs']} | {r['vec_env']} | {r['gpg_params']} | {r['ppo_params']} | "
            f"{r['gpg_params'] / r['ppo_params']:.3f} | {memory} |"
        )
    return "\n".join(lines) + "\n"


# (label, n_envs, n_steps, observation size): the rollouts of gpg.yml's Walker2d-v5 and HalfCheetah-v5 entries
ESTIMATOR_SHAPES = [("Walker2d-v5", 8, 512, 17), ("HalfCheetah-v5", 32, 64, 17)]
ESTIMATOR_OPTIONS: list[tuple[str, dict[str, Any]]] = [
    ("time bins", dict(baseline="bins")),
    ("linear, each rollout alone", dict(baseline="linear", baseline_kwargs=dict(memory=0, fourier=0, fourier_seed=0))),
    ("linear, memory 8", dict(baseline="linear", baseline_kwargs=dict(fourier=0, fourier_seed=0))),
    ("linear, memory 32", dict(baseline="linear", baseline_kwargs=dict(memory=32, recency=0.9, fourier=0, fourier_seed=0))),
    ("linear, the default (memory 8, 256 Fourier features)", dict(baseline="linear", baseline_kwargs=dict(fourier_seed=0))),
    ("the default with 8 folds", dict(baseline="linear", baseline_kwargs=dict(n_folds=8, fourier_seed=0))),
    (
        "the default with 8 folds and the lagged choice of a pooled level over 32 rollouts",
        dict(baseline="linear", baseline_kwargs=dict(n_folds=8, pooled_memory=32, pooled_choice="previous", fourier_seed=0)),
    ),
]


def estimator_shape(text: str) -> tuple[str, int, int, int]:
    """
    :param text: ``LABEL:N_ENVS:N_STEPS:OBS_SIZE``, the three sizes positive
    :return: the shape as a row of ``ESTIMATOR_SHAPES``
    """
    try:
        label, *sizes = text.split(":")
        n_envs, n_steps, obs_size = (int(size) for size in sizes)
        if min(n_envs, n_steps, obs_size) >= 1:
            return label, n_envs, n_steps, obs_size
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"{text!r}: give a rollout's shape as LABEL:N_ENVS:N_STEPS:OBS_SIZE, sizes of 1 or more")


def estimator_times(repeats: int, seed: int, shapes: list[tuple[str, int, int, int]]) -> str:
    """
    :param repeats: rollouts timed per option and shape, after the memory's
    :param seed: the random rollouts' seed
    :param shapes: the rollouts' shapes, as ``ESTIMATOR_SHAPES``
    :return: the table of one rollout's estimate's CPU time (ms) per option and rollout shape
    """
    rng = np.random.default_rng(seed)
    header = " | ".join(f"{label} ({n_envs} x {n_steps}, {size} dims)" for label, n_envs, n_steps, size in shapes)
    lines = [f"| option | {header} |", "|---|" + "---|" * len(shapes)]
    for name, kwargs in tqdm(ESTIMATOR_OPTIONS, desc="estimator options"):
        cells = []
        for _, n_envs, n_steps, obs_size in shapes:
            options = GroupOptions(truncated_returns="bootstrap", **kwargs).checked(obs_size)
            memory = BaselineMemory(remembered_rollouts(options.baseline_kwargs))
            times = []
            for repeat in range(repeats + 32):  # the memory fills first
                observations = rng.normal(size=(n_steps, n_envs, obs_size)).astype(np.float32)
                starts = (rng.random((n_steps, n_envs)) < 0.005).astype(np.float32)
                times_in_episode = np.cumsum(np.ones((n_steps, n_envs), dtype=np.int64), axis=0)
                start = time.process_time()
                result = estimate(observations, rng.normal(size=(n_steps, n_envs)).astype(np.float32), starts,
                                  np.zeros(n_envs, dtype=bool), observations[-1], episode_times=times_in_episode,
                                  options=options, gamma=0.99, gae_lambda=0.95, memory=memory)  # fmt: skip
                if repeat >= 32:
                    times.append(time.process_time() - start)
                if result.memory_entry is not None:
                    memory.rollouts.append(result.memory_entry)
                    memory.last_fit = result.last_fit
            cells.append(f"{statistics.median(times) * 1000:.1f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--configs",
        nargs="*",
        help="env:n_envs:binning[:vec_env] (dummy, subproc or envpool; default dummy), or the full grid; binning "
        "'default': the constructor's estimator",
    )
    parser.add_argument(
        "--profile",
        metavar="ENV:N_ENVS:BINNING:VEC_ENV",
        help="profile GPG's iterations on one configuration (cProfile, after a warm-up) and print where the time goes",
    )
    parser.add_argument("--n-steps", type=int, default=None, help="steps per env per rollout (default 128; HalfCheetah 256)")
    parser.add_argument("--n-epochs", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=7, help="measured iterations per algorithm")
    parser.add_argument("--peak-iterations", type=int, default=2, help="iterations in the memory subprocess (0: skip)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, help="markdown file to write (and a .json beside it)")
    parser.add_argument("--estimator", action="store_true", help="time the estimator's options alone (CPU time per rollout)")
    parser.add_argument(
        "--shapes",
        nargs="+",
        type=estimator_shape,
        default=ESTIMATOR_SHAPES,
        metavar="LABEL:N_ENVS:N_STEPS:OBS_SIZE",
        help="--estimator: the rollouts' shapes (default: gpg.yml's Walker2d-v5 and HalfCheetah-v5)",
    )
    args = parser.parse_args()
    if args.shapes is not ESTIMATOR_SHAPES and not args.estimator:
        parser.error("--shapes times the estimator alone: pass --estimator with it")
    th.set_num_threads(1)

    if args.estimator:
        command, load = " ".join(sys.argv[1:]), os.getloadavg()[0]
        times = estimator_times(args.repeats, args.seed, args.shapes)
        report = (
            f"# The estimator's cost per rollout\n\nCommand: `python scripts/benchmark_speed.py {command}`\n\n"
            f"CPU time of one rollout's `estimate` in ms (median of {args.repeats}, the memory full, "
            "truncated_returns='bootstrap', gae_lambda 0.95; random observations of the sizes given; the machine's load "
            f"average (1 min) {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end). {_machine()}\n\n{times}\n"
        )
        print(report)
        if args.output:
            args.output.write_text(report)
        return

    if args.profile:
        print(profile(args.profile, args))
        return
    configs = DEFAULT_CONFIGS
    if args.configs:
        configs = [parse_config(config) for config in args.configs]
    start, load = time.perf_counter(), os.getloadavg()[0]
    results = [benchmark(*config, args) for config in tqdm(configs, desc="configurations")]
    report = markdown(results, args, time.perf_counter() - start, (load, os.getloadavg()[0]))
    print(report)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(report)
        args.output.with_suffix(".json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
