"""
Try one GPG configuration quickly: train with the given keyword arguments and print the deterministic evaluation
(10 episodes, the same ones each time) and the mean training return after every fifth of the budget. This is how the
hyperparams/gpg.yml entries were chosen ("tuning run" in benchmarks/hyperparams.md).

    python scripts/try_hyperparams.py LunarLander-v3 1e6 '{"n_envs": 16, "n_steps": 1024, "batch_size": 256}' [seed]

Besides GPG's arguments the JSON takes n_envs, normalize (VecNormalize), max_episode_steps (a time limit for
training and evaluation), eval_max_episode_steps (for evaluation only) and "lin_<value>" strings for a linearly
annealed learning_rate or clip_range, as RL Zoo writes them. Training is one learn() call, so such a schedule anneals
over the whole budget, as in RL Zoo (the tuning runs quoted in benchmarks/hyperparams.md, made with an earlier version
that called learn() once per fifth, restarted it each fifth). A fifth of the budget is rounded up to whole iterations.
"""

import json
import sys
import time
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.utils import LinearSchedule

from sb3_gpg import GPG
from sb3_gpg_bench.experiments import EVAL_NORMALIZE, PeriodicEvaluation, make_envs


def main() -> None:
    env_id, n_timesteps, kwargs = sys.argv[1], int(float(sys.argv[2])), json.loads(sys.argv[3])
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    th.set_num_threads(1)
    n_envs, normalize = kwargs.pop("n_envs", 1), kwargs.pop("normalize", False)
    env_kwargs = {}
    if "max_episode_steps" in kwargs:
        env_kwargs["max_episode_steps"] = kwargs.pop("max_episode_steps")
    eval_env_kwargs = dict(env_kwargs)
    if "eval_max_episode_steps" in kwargs:
        eval_env_kwargs["max_episode_steps"] = kwargs.pop("eval_max_episode_steps")
    for key in ("learning_rate", "clip_range"):
        if isinstance(kwargs.get(key), str):
            kwargs[key] = LinearSchedule(float(kwargs[key].split("_")[1]), 0.0, 1.0)

    normalized = {"gamma": kwargs.get("gamma", 0.99)} if normalize else None
    env = make_envs(env_id, n_envs, seed, env_kwargs=env_kwargs, normalize=normalized)
    eval_env = make_envs(env_id, 1, 1000 + seed, env_kwargs=eval_env_kwargs, normalize=EVAL_NORMALIZE if normalize else None)
    model = GPG("MlpPolicy", env, seed=seed, device="cpu", **kwargs)
    start, steps_per_iteration = time.time(), model.n_steps * n_envs
    every = -(-max(n_timesteps // 5, 1) // steps_per_iteration)  # iterations in a fifth of the budget, rounded up

    def report(evaluation: PeriodicEvaluation) -> dict[str, Any]:
        episodes = [info["r"] for info in model.ep_info_buffer]
        row = dict(train_mean=sum(episodes) / max(len(episodes), 1), steps=model.num_timesteps,
                   eval_mean=evaluation.last_mean_reward, eval_std=float(np.std(evaluation.episode_returns)))  # fmt: skip
        print(
            f"train_ep_rew={row['train_mean']:.1f} {env_id} steps={row['steps']} eval={row['eval_mean']:.1f}"
            f"+-{row['eval_std']:.1f} wall={time.time() - start:.0f}s",
            flush=True,
        )
        return row

    evaluation = PeriodicEvaluation(eval_env, every, report, eval_seed=1000 + seed, n_eval_episodes=10)
    model.learn(-(-n_timesteps // (every * steps_per_iteration)) * every * steps_per_iteration, callback=evaluation)
    evaluation.evaluate()  # the last fifth's: no rollout starts after it


if __name__ == "__main__":
    main()
