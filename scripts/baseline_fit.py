"""
How much of the return variance each baseline explains, out of fold, on rollouts of a trained GPG policy: the time
bins and the fitted baselines (``baseline="linear"`` and ``"knn"``) over a grid of their arguments. It chose the
defaults of ``fitted_baselines.BASELINE_KWARGS``.

Trains GPG with its ``gpg.yml`` entry (VecNormalize where the entry has it) on a tuning seed, then collects
``--rollouts`` rollouts of ``--n-envs`` x ``--n-steps`` with the trained policy (observations as the policy sees them)
and computes every baseline on each, as ``train/baseline_explained_variance`` is logged: SB3's explained variance of
baselines in which no trajectory's own returns enter its own baseline.

    python scripts/baseline_fit.py --env HalfCheetah-v5 --timesteps 300000 --output benchmarks/state_aware/fit_halfcheetah.md
"""

import argparse
from pathlib import Path

import numpy as np
import torch as th
import yaml
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecNormalize
from tqdm import tqdm

from sb3_gpg import GPG, GroupRolloutBuffer
from sb3_gpg.estimator.fitted_baselines import BASELINE_KWARGS

GRID = [
    dict(baseline="bins"),
    *[dict(baseline="linear", baseline_kwargs=dict(ridge=ridge, n_folds=folds))
      for ridge in (1e-5, 1e-2, 1.0, 100.0) for folds in (2, 4)],
    *[dict(baseline="knn", baseline_kwargs=dict(n_neighbors=k, n_folds=folds)) for k in (4, 16, 64) for folds in (2, 4)],
]  # fmt: skip


def entry(env_id: str) -> dict:
    """:return: the env's gpg.yml entry, with RL Zoo's own keys split off"""
    entries = yaml.safe_load((Path(__file__).resolve().parents[1] / "sb3_gpg" / "hyperparams" / "gpg.yml").read_text())
    return dict(entries.get(env_id, entries["default"]))


def train(env_id: str, timesteps: int, seed: int, n_envs: int | None = None) -> tuple[GPG, VecNormalize | None]:
    """:param n_envs: the training envs, instead of the entry's"""
    hyperparams = entry(env_id)
    entry_n_envs, normalize = hyperparams.pop("n_envs", 1), hyperparams.pop("normalize", False)
    n_envs = n_envs or entry_n_envs
    for key in ("n_timesteps", "policy"):
        hyperparams.pop(key, None)
    env = make_vec_env(env_id, n_envs=n_envs, seed=seed)
    if normalize:
        env = VecNormalize(env, gamma=hyperparams.get("gamma", 0.99))
    model = GPG("MlpPolicy", env, seed=seed, **hyperparams)
    model.learn(timesteps, progress_bar=True)
    return model, env if normalize else None


def collect(model: GPG, env_id: str, normalizer: VecNormalize | None, n_envs: int, n_steps: int, seed: int) -> dict:
    """:return: one rollout's observations (as the policy sees them), rewards (normalised if training's were), starts"""
    env = make_vec_env(env_id, n_envs=n_envs, seed=seed)
    if normalizer is not None:
        env = VecNormalize(env, gamma=normalizer.gamma, training=False)
        env.obs_rms, env.ret_rms = normalizer.obs_rms, normalizer.ret_rms
    obs = env.reset()
    starts = np.ones(n_envs, dtype=np.float32)
    rollout = {"observations": [], "rewards": [], "starts": []}
    for _ in range(n_steps):
        with th.no_grad():
            actions, _ = model.predict(obs, deterministic=False)
        next_obs, rewards, dones, _ = env.step(actions)
        rollout["observations"].append(obs)
        rollout["rewards"].append(rewards)
        rollout["starts"].append(starts)
        obs, starts = next_obs, dones.astype(np.float32)
    return {key: np.asarray(value) for key, value in rollout.items()} | {"dones": starts.astype(bool)}


def explained_variance(rollout: dict, model: GPG, setting: dict) -> float:
    n_steps, n_envs = rollout["rewards"].shape
    buffer = GroupRolloutBuffer(n_steps, model.observation_space, model.action_space, gamma=model.gamma, n_envs=n_envs,
                                binning="time", **setting)  # fmt: skip
    for step in range(n_steps):
        buffer.add(rollout["observations"][step], np.zeros((n_envs, *model.action_space.shape)), rollout["rewards"][step],
                   rollout["starts"][step], th.zeros(n_envs), th.zeros(n_envs))  # fmt: skip
    buffer.compute_returns_and_advantage(th.zeros(n_envs), rollout["dones"])
    return buffer.group_stats["baseline_explained_variance"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="HalfCheetah-v5")
    parser.add_argument("--timesteps", type=int, default=300_000)
    parser.add_argument("--seed", type=int, default=100, help="a tuning seed (100 and above)")
    parser.add_argument("--n-envs", type=int, default=16)
    parser.add_argument("--n-steps", type=int, default=1000)
    parser.add_argument("--rollouts", type=int, default=3)
    parser.add_argument("--train-n-envs", type=int, default=None, help="training envs instead of the entry's n_envs")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()
    th.set_num_threads(1)
    model, normalizer = train(args.env, args.timesteps, args.seed, args.train_n_envs)
    rollouts = [
        collect(model, args.env, normalizer, args.n_envs, args.n_steps, args.seed + 1000 + i) for i in range(args.rollouts)
    ]
    lines = [
        f"# Out-of-fold explained variance of the baselines: {args.env}",
        "",
        f"`python scripts/baseline_fit.py --env {args.env} --timesteps {args.timesteps} --seed {args.seed}"
        + (f" --train-n-envs {args.train_n_envs}" if args.train_n_envs else "") + "`: "
        f"GPG trained {args.timesteps:,} steps with its gpg.yml entry (seed {args.seed}"
        + (f", {args.train_n_envs} envs" if args.train_n_envs else "") + f"), then {args.rollouts} rollouts of "
        f"{args.n_envs} envs x {args.n_steps} steps with its policy; mean ± std over the rollouts. Defaults: "
        f"{BASELINE_KWARGS}.",
        "",
        "| baseline | arguments | explained variance | per rollout |",
        "|---|---|---|---|",
    ]  # fmt: skip
    for setting in tqdm(GRID, desc="baselines"):
        values = [explained_variance(rollout, model, setting) for rollout in rollouts]
        kwargs = ", ".join(f"{key}={value}" for key, value in setting.get("baseline_kwargs", {}).items()) or "time bins"
        per_rollout = " / ".join(f"{value:.2f}" for value in values)
        lines.append(f"| {setting['baseline']} | {kwargs} | {np.mean(values):.3f} ± {np.std(values):.3f} | {per_rollout} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text)


if __name__ == "__main__":
    main()
