"""
What a GPU buys GPG and PPO: seconds per iteration on CUDA and on the CPU, for an MLP and a CNN policy at two sizes.

Both algorithms run the same work in each row (rollout, minibatch, epochs, network, DummyVecEnv), as in
``benchmark_speed.py``, whose timing this uses: one warm-up iteration each, then GPG's and PPO's iterations
alternate, and the medians over the repeats are reported, split into rollout collection, advantage computation and
policy update. The rows:

- ``mlp-64``, ``mlp-256``: HalfCheetah-v5, 16 envs x 256 steps, minibatch 512, 10 epochs, two hidden layers of 64 or
  256 units (SB3's default MLP, and RL Zoo's MuJoCo size)
- ``cnn-84x84x1``, ``cnn-84x84x4``: SB3's ``FakeImageEnv`` (random 84x84 images, 6 discrete actions: the network's
  cost without an emulator's), NatureCNN, 8 envs x 128 steps, minibatch 256, 4 epochs; one frame, or four stacked

each on ``cuda`` (torch on the GPU; the envs and GPG's estimator stay on the CPU), on ``cpu-1`` (one torch thread,
what this project's guides recommend for small policies; MLP rows only) and on ``cpu-N`` (a torch thread per CPU this
process may use). NumPy runs on one thread throughout (OMP_NUM_THREADS=1 where it is unset). Each row is printed and appended
to ``--jsonl`` as it finishes, so that a run stopped early keeps what it measured; ``--report`` writes the table.

Run from the repository root, on a machine with a CUDA GPU:

    python scripts/benchmark_gpu.py --jsonl /tmp/speed_gpu.jsonl
    python scripts/benchmark_gpu.py --report /tmp/speed_gpu.jsonl --output benchmarks/speed_gpu.md  # a table per file

``--devices cpu-1`` and ``--rows mlp-64`` pick a part (a machine without a GPU: ``--devices cpu-1 cpu-N``).
"""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # NumPy's BLAS (GPG's estimator) on one thread; read when NumPy loads

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import stable_baselines3
import torch as th
from benchmark_speed import PHASES, time_alternately
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.envs import FakeImageEnv
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

import sb3_gpg
from sb3_gpg import GPG

ROWS = {
    "mlp-64": dict(env="HalfCheetah-v5", n_envs=16, n_steps=256, batch_size=512, n_epochs=10, net=64),
    "mlp-256": dict(env="HalfCheetah-v5", n_envs=16, n_steps=256, batch_size=512, n_epochs=10, net=256),
    "cnn-84x84x1": dict(env="image", channels=1, n_envs=8, n_steps=128, batch_size=256, n_epochs=4),
    "cnn-84x84x4": dict(env="image", channels=4, n_envs=8, n_steps=128, batch_size=256, n_epochs=4),
}
DEVICES = ("cuda", "cpu-1", "cpu-N")


def make_env(row: dict, seed: int) -> VecEnv:
    """
    :param row: one of ``ROWS``
    :param seed: the envs' seed
    :return: the row's envs on a DummyVecEnv
    """
    if row["env"] == "image":
        channels = row["channels"]
        return make_vec_env(
            lambda: FakeImageEnv(screen_height=84, screen_width=84, n_channels=channels, discrete=True),
            n_envs=row["n_envs"],
            seed=seed,
            vec_env_cls=DummyVecEnv,
        )
    return make_vec_env(row["env"], n_envs=row["n_envs"], seed=seed, vec_env_cls=DummyVecEnv)


def make_model(algo: str, row: dict, device: str, seed: int, n_steps: int | None = None) -> GPG | PPO:
    """
    :param algo: ``gpg`` (the constructor's defaults) or ``ppo``
    :param row: one of ``ROWS``
    :param device: a column of ``DEVICES``
    :param seed: the model's and the envs' seed
    :param n_steps: each env's rollout length instead of the row's (the minibatch shrinks to the rollout if need be)
    """
    n_steps = row["n_steps"] if n_steps is None else n_steps
    batch_size = min(row["batch_size"], n_steps * row["n_envs"])
    kwargs = dict(n_steps=n_steps, batch_size=batch_size, n_epochs=row["n_epochs"], seed=seed)
    if "net" in row:
        kwargs["policy_kwargs"] = dict(net_arch=[row["net"]] * 2)
    policy = "CnnPolicy" if row["env"] == "image" else "MlpPolicy"
    algo_class = GPG if algo == "gpg" else PPO
    return algo_class(policy, make_env(row, seed), device="cuda" if device == "cuda" else "cpu", **kwargs)


def threads(device: str) -> int:
    """:return: torch's intra-op threads for a device column (cpu-N: one per CPU this process may use)"""
    return {"cuda": 1, "cpu-1": 1}.get(device, len(os.sched_getaffinity(0)))


def benchmark(name: str, device: str, repeats: int, seed: int, n_steps: int | None = None) -> dict:
    """
    :param name: a key of ``ROWS``
    :param device: a column of ``DEVICES``
    :param repeats: the timed iterations of each algorithm, after one warm-up each
    :param seed: the models' and the envs' seed
    :param n_steps: each env's rollout length instead of the row's
    :return: the medians of each phase and of the whole iteration, per algorithm, and GPG's over PPO's
    """
    row = ROWS[name]
    th.set_num_threads(threads(device))
    models = {algo: make_model(algo, row, device, seed, n_steps) for algo in ("gpg", "ppo")}
    # the warm-up iteration also takes CUDA's kernels, cuDNN's choice of algorithms and the first allocations
    result: dict = {"row": name, "device": device, "threads": th.get_num_threads(), "repeats": repeats}
    result.update(time_alternately(models, repeats))
    result["ratio"] = result["gpg_iteration"] / result["ppo_iteration"]
    for model in models.values():
        model.env.close()
    return result


def machine() -> dict:
    gpu = th.cuda.get_device_name(0) if th.cuda.is_available() else None
    return {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, GPU: {gpu}",
        "versions": f"python {platform.python_version()}, torch {th.__version__} (CUDA {th.version.cuda}), "
        f"stable-baselines3 {stable_baselines3.__version__}, sb3-gpg {sb3_gpg.__version__}",
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
    }


def run(args: argparse.Namespace) -> None:
    """Time every row on every device of ``args``, each row written to ``args.jsonl`` (a new file) as it finishes."""
    if "cuda" in args.devices and not th.cuda.is_available():
        sys.exit("benchmark_gpu.py: torch sees no CUDA device; pass --devices cpu-1 cpu-N to time the CPU alone")
    if args.n_steps is not None and args.n_steps < 1:
        sys.exit(f"benchmark_gpu.py: --n-steps {args.n_steps}: give each env's rollout length, 1 or more")
    with open(args.jsonl, "w") as out:
        out.write(json.dumps({"meta": machine()}) + "\n")
        for name in args.rows:
            for device in args.devices:
                if device == "cpu-1" and name.startswith("cnn"):
                    continue  # a CNN on one thread is not a setting anyone would choose
                start = time.perf_counter()
                result = benchmark(name, device, args.repeats, args.seed, args.n_steps)
                result["seconds"] = time.perf_counter() - start
                out.write(json.dumps(result) + "\n")
                out.flush()
                print(
                    f"{name:12} {device:6} GPG {result['gpg_iteration']:.3f} s  PPO {result['ppo_iteration']:.3f} s  "
                    f"GPG/PPO {result['ratio']:.2f}  ({result['seconds']:.0f} s)",
                    flush=True,
                )


def table(path: str) -> tuple[dict, list[str]]:
    """:return: a ``--jsonl`` file's machine, and its rows as a Markdown table with each policy's fastest device"""
    lines = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    meta = next(line["meta"] for line in lines if "meta" in line)
    rows = [line for line in lines if "row" in line]
    if not rows:
        sys.exit(f"benchmark_gpu.py: {path} has no timed row: its run stopped before the first finished")
    text = [
        "| policy | device (torch threads) | GPG s/iteration | PPO s/iteration | GPG/PPO "
        "| GPG rollout / advantage / update | PPO rollout / advantage / update |",
        "|---|---|---|---|---|---|---|",
    ]
    best: dict[tuple[str, str], tuple[str, float]] = {}
    for row in rows:
        phases = {algo: " / ".join(f"{row[f'{algo}_{phase}']:.3f}" for phase in PHASES) for algo in ("gpg", "ppo")}
        text.append(
            f"| {row['row']} | {row['device']} ({row['threads']}) | {row['gpg_iteration']:.3f} | {row['ppo_iteration']:.3f} "
            f"| {row['ratio']:.2f} | {phases['gpg']} | {phases['ppo']} |"
        )
        for algo in ("gpg", "ppo"):  # per policy and algorithm, the device with the shortest iteration
            key = (row["row"], algo)
            if key not in best or row[f"{algo}_iteration"] < best[key][1]:
                best[key] = (row["device"], row[f"{algo}_iteration"])
    names = dict.fromkeys(row["row"] for row in rows)
    text += ["", *(f"- {name}: GPG fastest on {best[(name, 'gpg')][0]}, PPO on {best[(name, 'ppo')][0]}" for name in names)]
    meta["repeats"] = rows[0]["repeats"]
    return meta, text


def report(paths: list[str]) -> str:
    """:return: the page: one table per ``--jsonl`` file, in the order given"""
    page = [
        "# GPG and PPO on a GPU and on the CPU",
        "",
        "Made by `python scripts/benchmark_gpu.py`: seconds per iteration, the median of the repeats after a warm-up; "
        "the rows are described in the script's docstring. `cuda`: the policy on the GPU; `cpu-1`, `cpu-N`: on the CPU "
        "with one torch thread or one per CPU. The envs and GPG's estimator run on the CPU in every row.",
    ]
    for number, path in enumerate(paths, 1):
        meta, text = table(path)
        page += [
            "",
            f"## Run {number} of {len(paths)}: {meta['date']}, {meta['repeats']} repeats",
            "",
            f"{meta['machine']}; {meta['versions']}.",
            "",
            *text,
        ]
    return "\n".join(page) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", nargs="+", choices=list(ROWS), default=list(ROWS))
    parser.add_argument("--devices", nargs="+", choices=DEVICES, default=list(DEVICES))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-steps", type=int, help="each env's rollout length, for every row (default: the row's)")
    parser.add_argument("--jsonl", default="speed_gpu.jsonl", help="where each row is appended as it finishes")
    parser.add_argument(
        "--report", nargs="+", metavar="JSONL", help="write the tables of finished --jsonl files instead of timing"
    )
    parser.add_argument("--output", help="the table's Markdown file (--report; default: print it)")
    args = parser.parse_args()
    if args.report:
        text = report(args.report)
        if args.output:
            Path(args.output).write_text(text)
        else:
            print(text)
        return
    run(args)


if __name__ == "__main__":
    main()
