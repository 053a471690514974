"""
Try one GPG configuration quickly: train with the given keyword arguments and print the deterministic evaluation
(10 episodes) and the mean training return after every fifth of the budget. This is how the hyperparams/gpg.yml
entries were chosen ("tuning run" in its comments).

    python scripts/try_hyperparams.py LunarLander-v3 1e6 '{"n_envs": 16, "n_steps": 1024, "batch_size": 256}' [seed]

Besides GPG's arguments the JSON takes n_envs, normalize (VecNormalize), max_episode_steps (a time limit for
training and evaluation), eval_max_episode_steps (for evaluation only) and "lin_<value>" strings for a linearly
annealed learning_rate or clip_range, as RL Zoo writes them. learn() is called once per fifth of the budget, so
such a schedule restarts each fifth (RL Zoo anneals over the whole budget).
"""

import json
import sys
import time

import torch as th
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.utils import LinearSchedule
from stable_baselines3.common.vec_env import VecNormalize

from sb3_gpg import GPG


def main() -> None:
    env_id, n_timesteps, kwargs = sys.argv[1], int(float(sys.argv[2])), json.loads(sys.argv[3])
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    th.set_num_threads(1)
    n_envs, normalize = kwargs.pop("n_envs", 1), kwargs.pop("normalize", False)
    env_kwargs = {"render_mode": None}  # make_vec_env's default rgb_array slows LunarLander down; nothing here renders
    if "max_episode_steps" in kwargs:
        env_kwargs["max_episode_steps"] = kwargs.pop("max_episode_steps")
    eval_env_kwargs = dict(env_kwargs)
    if "eval_max_episode_steps" in kwargs:
        eval_env_kwargs["max_episode_steps"] = kwargs.pop("eval_max_episode_steps")
    for key in ("learning_rate", "clip_range"):
        if isinstance(kwargs.get(key), str):
            kwargs[key] = LinearSchedule(float(kwargs[key].split("_")[1]), 0.0, 1.0)

    env = make_vec_env(env_id, n_envs=n_envs, seed=seed, env_kwargs=env_kwargs)
    if normalize:
        env = VecNormalize(env, gamma=kwargs.get("gamma", 0.99))
    model = GPG("MlpPolicy", env, seed=seed, device="cpu", **kwargs)
    start, chunk = time.time(), max(n_timesteps // 5, 1)
    while model.num_timesteps < n_timesteps:
        model.learn(chunk, reset_num_timesteps=False)
        eval_env = make_vec_env(env_id, n_envs=1, seed=1000 + seed, env_kwargs=eval_env_kwargs)
        if normalize:
            eval_env = VecNormalize(eval_env, training=False, norm_reward=False)
            eval_env.obs_rms = env.obs_rms
        mean, std = evaluate_policy(model, eval_env, n_eval_episodes=10, deterministic=True)
        episodes = [info["r"] for info in model.ep_info_buffer]
        train_mean = sum(episodes) / max(len(episodes), 1)
        print(
            f"train_ep_rew={train_mean:.1f} {env_id} steps={model.num_timesteps} eval={mean:.1f}+-{std:.1f} "
            f"wall={time.time() - start:.0f}s",
            flush=True,
        )


if __name__ == "__main__":
    main()
