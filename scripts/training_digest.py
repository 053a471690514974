"""
Digests of training: for several configurations (every algorithm, the estimator's options, the fitted baselines,
VecNormalize, gSDE), the SHA-256 of the policy's parameters and the last rollout's advantages after four iterations,
and that of the last rollout's diagnostics (the group's statistics, whatever their names, and the explained variance).
Run against two checkouts to check that a change leaves training unchanged to the bit:

    PYTHONPATH=/path/to/old/checkout python scripts/training_digest.py > old.txt
    python scripts/training_digest.py > new.txt && diff old.txt new.txt

or against the committed digests (``benchmarks/training_digest.txt``), exiting 1 on a difference:

    python scripts/training_digest.py --verify benchmarks/training_digest.txt

The digests are made on one torch thread and one BLAS thread. They are of one machine's arithmetic (NumPy's and
torch's CPU kernels): another CPU or library version may round differently, so the committed file holds a block per
machine, each headed by the line ``environment()`` gives there, and a machine is checked against its own block. Add
one only from a checkout known to train as the committed digests do on another machine (the code that made them, or a
change checked there).
"""

import argparse
import hashlib
import platform
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from sb3_contrib.common.envs import InvalidActionEnvDiscrete
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecNormalize
from threadpoolctl import threadpool_limits

import sb3_gpg
from sb3_gpg import GPG, MaskableGPG, MaskableRecurrentGPG, RecurrentGPG

# The estimator's statistics left out of the diagnostics' digest: its time, which is not a function of the rollout, and
# whether the optimism raised the baselines and the linear fit's size, which the advantages' digest already carries (so
# that a machine's digests made before they were logged still hold)
UNDIGESTED = ("advantage_time", "optimism_raised", "fit_size")


def cartpole(n_envs: int) -> Any:
    return make_vec_env("CartPole-v1", n_envs=n_envs, seed=0)


def pendulum(n_envs: int) -> Any:
    return VecNormalize(make_vec_env("Pendulum-v1", n_envs=n_envs, seed=0))


def invalid_actions(n_envs: int) -> Any:
    return make_vec_env(lambda: InvalidActionEnvDiscrete(dim=8, n_invalid_actions=3), n_envs=n_envs, seed=0)


# The digests are of the CPU's arithmetic: on the CPU wherever the script runs, a GPU machine's included
ON_CPU = dict(seed=0, device="cpu")
CASES: dict[str, Callable[[], Any]] = {
    # the constructor's estimator at lambda 1, as before gae_lambda defaulted to "auto" (the next case)
    "cartpole-default": lambda: GPG("MlpPolicy", cartpole(4), n_steps=64, batch_size=64, **ON_CPU, gae_lambda=1.0),
    "cartpole-auto-lambda": lambda: GPG("MlpPolicy", cartpole(4), n_steps=64, batch_size=64, **ON_CPU),
    "cartpole-paper": lambda: GPG("MlpPolicy", cartpole(4), n_steps=64, batch_size=64, **ON_CPU, baseline="bins"),
    "cartpole-loo-min2-binstd": lambda: GPG("MlpPolicy", cartpole(4), n_steps=64, batch_size=64, **ON_CPU, leave_one_out=True,
                                            min_bin_count=2, advantage_scale="bin_std", baseline="bins"),
    "cartpole-mask-spatialtime": lambda: GPG("MlpPolicy", cartpole(4), n_steps=64, batch_size=32, **ON_CPU,
                                             truncated_returns="mask", binning="spatial_time", bin_size=0.5),
    "cartpole-spatialtime-min3": lambda: GPG("MlpPolicy", cartpole(4), n_steps=64, batch_size=64, **ON_CPU,
                                             binning="spatial_time", bin_size=0.5, min_bin_count=3),
    "cartpole-binstd-spatialtime-min2": lambda: GPG("MlpPolicy", cartpole(4), n_steps=64, batch_size=64, **ON_CPU,
                                                    advantage_scale="bin_std", binning="spatial_time", bin_size=0.5,
                                                    min_bin_count=2),
    "pendulum-bootstrap-norm": lambda: GPG("MlpPolicy", pendulum(4), n_steps=64, batch_size=64, **ON_CPU,
                                           truncated_returns="bootstrap", use_sde=True, baseline="bins"),
    # the fit on the returns, named: its default target at this lambda is its own lambda-returns (the next case)
    "pendulum-linear-lambda-bootstrap-norm": lambda: GPG("MlpPolicy", pendulum(4), n_steps=64, batch_size=64, **ON_CPU,
                                                         baseline="linear", gae_lambda=0.95,
                                                         truncated_returns="bootstrap",
                                                         baseline_kwargs=dict(target="returns")),
    "pendulum-linear-lambda-target-bootstrap-norm": lambda: GPG("MlpPolicy", pendulum(4), n_steps=64, batch_size=64,
                                                                **ON_CPU, baseline="linear", gae_lambda=0.95,
                                                                truncated_returns="bootstrap"),
    "pendulum-knn-bootstrap-norm": lambda: GPG("MlpPolicy", pendulum(4), n_steps=64, batch_size=64, **ON_CPU,
                                               baseline="knn", truncated_returns="bootstrap", gae_lambda=1.0),
    # 64-step rollouts of 200-step episodes: some hold no complete return, which the memory completes
    "pendulum-memory-fourier-bootstrap-norm": lambda: GPG("MlpPolicy", pendulum(4), n_steps=64, batch_size=64, **ON_CPU,
                                                          baseline="linear", truncated_returns="bootstrap",
                                                          baseline_kwargs=dict(memory=2, fourier=16), gae_lambda=1.0),
    "cartpole-knn": lambda: GPG("MlpPolicy", cartpole(4), n_steps=64, batch_size=64, **ON_CPU, baseline="knn",
                                truncated_returns="keep", gae_lambda=1.0),
    "maskable": lambda: MaskableGPG("MlpPolicy", invalid_actions(2), n_steps=64, batch_size=32, **ON_CPU, baseline="bins"),
    "recurrent-bootstrap": lambda: RecurrentGPG("MlpLstmPolicy", cartpole(2), n_steps=64, batch_size=32, **ON_CPU,
                                                truncated_returns="bootstrap", n_epochs=2, baseline="bins"),
    "recurrent-mask": lambda: RecurrentGPG("MlpLstmPolicy", cartpole(2), n_steps=32, batch_size=16, **ON_CPU,
                                           truncated_returns="mask", n_epochs=2, baseline="bins"),
    "maskable-recurrent": lambda: MaskableRecurrentGPG("MlpLstmPolicy", invalid_actions(2), n_steps=32, batch_size=16,
                                                       **ON_CPU, n_epochs=2, baseline="bins"),
}  # fmt: skip


def digest(model: GPG) -> str:
    """
    :return: the first 16 hex digits of the SHA-256 of the policy's parameters and the last rollout's advantages, and
        those of the last rollout's diagnostics (their values, sorted, so that a renamed statistic keeps its digest)
    """
    sha = hashlib.sha256()
    for parameter in model.policy.parameters():
        sha.update(parameter.detach().cpu().numpy().tobytes())
    buffer = model.rollout_buffer
    sha.update(np.asarray(buffer.advantages).tobytes())
    stats = [repr(float(value)) for key, value in buffer.group_stats.items() if key not in UNDIGESTED]
    stats.append(repr(float(buffer.explained_variance)))
    stats_sha = hashlib.sha256(" ".join(sorted(stats)).encode())
    return f"{sha.hexdigest()[:16]} {stats_sha.hexdigest()[:16]}"


def digests() -> dict[str, str]:
    """:return: every case's digests, by case"""
    threads = th.get_num_threads()
    th.set_num_threads(1)
    result = {}
    try:
        # one BLAS thread too: NumPy's BLAS splits the larger solves of the fitted baselines over its threads, and
        # their rounding, so the diagnostics' digest, changes with the number of threads
        with warnings.catch_warnings(), threadpool_limits(limits=1, user_api="blas"):
            warnings.simplefilter("ignore")
            for name, make in CASES.items():
                model = make()
                model.learn(4 * model.n_steps * model.n_envs)
                result[name] = digest(model)
    finally:
        th.set_num_threads(threads)
    return result


def environment() -> str:
    """
    :return: a comment line naming what the digests depend on besides the code: the libraries, and the CPU's kind,
        model name, family and model number (a virtual machine's model name, "AMD EPYC", can stand for generations
        whose vector instructions differ, and NumPy's BLAS rounds its linear solves differently on each)
    """
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.exists() else []
    fields: dict[str, str] = {}
    for line in lines:
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    model = fields.get("model name") or platform.processor() or "?"
    if "cpu family" in fields:
        model += f", family {fields['cpu family']} model {fields.get('model', '?')}"
    return f"# numpy {np.__version__}, torch {th.__version__}, {platform.machine()}, {model}"


def blocks(text: str) -> dict[str, list[str]]:
    """
    :param text: a digest file: one block per machine, each an ``environment()`` line and its digest lines
    :return: each block's digest lines, by its environment line
    """
    result: dict[str, list[str]] = {}
    current: list[str] = []
    for line in filter(None, (line.strip() for line in text.splitlines())):
        if line.startswith("#"):
            current = result.setdefault(line, [])
        else:
            current.append(line)
    return result


def differences(lines: list[str], expected: list[str]) -> list[str]:
    """
    :param lines: digest lines computed now
    :param expected: one machine's committed digest lines (``blocks``), of the cases there were when they were made
    :return: the lines that differ, each marked as expected or got; empty when all match (a case added since, which
        that machine has no digest of, is not compared)
    """
    cases = {line.split()[0] for line in expected}
    return [f"  expected {line}" for line in expected if line not in lines] + [
        f"  got      {line}" for line in lines if line not in expected and line.split()[0] in cases
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--verify", metavar="FILE", help="compare with the digests in FILE; exit 1 on a difference")
    args = parser.parse_args(argv)
    print(f"sb3_gpg from {sb3_gpg.__file__}", file=sys.stderr)
    lines = [f"{name} {value}" for name, value in digests().items()]
    if args.verify is None:
        print(environment(), *lines, sep="\n")
        return 0
    with open(args.verify) as file:
        committed = blocks(file.read())
    if environment() not in committed:
        print(f"{args.verify} holds no digests made on this machine ({environment()[2:]}); on a checkout that trains as")
        print(f"the committed one, add them with: python scripts/training_digest.py >> {args.verify}")
        return 1
    differing = differences(lines, committed[environment()])
    if differing:
        print(f"Training differs from {args.verify}'s digests made on this machine ({environment()[2:]}):")
        print(*differing, sep="\n")
        return 1
    print(f"Training digests match {args.verify} ({len(lines)} configurations).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
