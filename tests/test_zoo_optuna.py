"""
RL Zoo's hyperparameter search with GPG: the sampler, its conversion back for --trial-id, the windowed trial score and
studies that processes share.
"""

import argparse
import subprocess
import sys

import gymnasium as gym
import numpy as np
import optuna
import pytest
from gymnasium import spaces
from rl_zoo3.callbacks import TrialEvalCallback
from rl_zoo3.exp_manager import ExperimentManager
from stable_baselines3.common.env_util import make_vec_env

from sb3_gpg import GPG
from sb3_gpg.zoo import convert_gpg_params, register_gpg, sample_gpg_params, sample_gpg_rollout, searched_binnings
from sb3_gpg.zoo.experiment import ZooExperimentManager
from sb3_gpg.zoo.extensions import WindowedTrialEvalCallback
from sb3_gpg.zoo.registry import MAX_ROLLOUT_POW, SEARCHED_BINNINGS
from tests.helpers import cli


@pytest.mark.parametrize("window", [1, 2])
def test_trial_score_is_the_mean_of_the_last_evaluations(window):
    study = optuna.create_study(direction="maximize")
    trial = study.ask()
    eval_env = make_vec_env("CartPole-v1", n_envs=1, seed=5)
    model = GPG("MlpPolicy", "CartPole-v1", n_steps=64, batch_size=64, seed=0, device="cpu")
    callback = WindowedTrialEvalCallback(eval_env, trial, n_eval_episodes=2, eval_freq=64, window=window)
    assert callback.scores == [] and callback.last_mean_reward == -np.inf  # no evaluation yet
    model.learn(64 * 4, callback=callback)
    scores = callback.scores
    assert len(scores) == 4 and len(set(scores)) > 1  # four evaluations that differ, so the window shows
    running = [float(np.mean(scores[max(0, i + 1 - window) : i + 1])) for i in range(4)]
    # What the pruner read after each evaluation, and the trial's value at the end (rl_zoo3 reads last_mean_reward)
    assert list(study.trials[0].intermediate_values.values()) == pytest.approx(running)
    assert callback.last_mean_reward == pytest.approx(running[-1])
    assert study.trials[0].user_attrs["score_window"] == window


def test_the_search_builds_its_trials_callback_with_the_window(tmp_path, monkeypatch):
    from rl_zoo3 import exp_manager

    register_gpg()  # the search binds GPG's registered sampler to the env's observation space
    manager = ZooExperimentManager(
        argparse.Namespace(), "gpg", "CartPole-v1", str(tmp_path), optimize_hyperparameters=True, trial_score_window=3
    )
    seen = []
    # rl_zoo3's search, which sb3_gpg's managers call last
    search = lambda self: seen.append(exp_manager.TrialEvalCallback)  # noqa: E731
    monkeypatch.setattr(ExperimentManager, "hyperparameters_optimization", search)
    manager.hyperparameters_optimization()
    # rl_zoo3's objective builds the callback its module names: the windowed one during the search, its own after
    assert seen[0].func is WindowedTrialEvalCallback and seen[0].keywords == {"window": 3}
    assert exp_manager.TrialEvalCallback is TrialEvalCallback


# A fixed seed fixes what the trials sample, and so what they cost: a random one draws rollouts of up to 2^15 samples
# (seed 1's first two trials: 2,048 and 256)
OPTIMIZE = [
    "--algo", "gpg", "--env", "CartPole-v1", "-optimize", "-n", "1024", "--n-evaluations", "1", "--eval-episodes", "2",
    "--study-name", "cartpole", "-f", "logs", "--seed", "1",
]  # fmt: skip


def count_trials(storage):
    return len(optuna.load_study(study_name="cartpole", storage=storage).trials)


@pytest.mark.slow
def test_optimize_two_trials_with_sqlite(tmp_path):
    storage = f"sqlite:///{tmp_path / 'gpg.db'}"
    window = ["--n-evaluations", "2", "--trial-score-window", "2", "--optimization-log-path", "trials"]
    cli("sb3_gpg.train", *OPTIMIZE, *window, "--n-trials", "2", "--n-jobs", "1", "--storage", storage, cwd=tmp_path)
    assert count_trials(storage) == 2
    for trial in optuna.load_study(study_name="cartpole", storage=storage).trials:
        # The group size is searched too: each trial trained with the n_envs it sampled
        assert trial.params["n_envs_pow"] in range(2, 7)
        # Scored by the mean of its last two evaluations (a large group's first rollout runs past the budget: more),
        # and so was each evaluation the pruner read
        scores = np.load(tmp_path / "trials" / f"trial_{trial.number}" / "evaluations.npz")["results"].mean(axis=1)
        assert len(scores) >= 2 and trial.value == pytest.approx(scores[-2:].mean())
        running = [scores[max(0, i - 1) : i + 1].mean() for i in range(len(scores))]
        assert list(trial.intermediate_values.values()) == pytest.approx(running)
        assert trial.user_attrs["score_window"] == 2


@pytest.mark.slow
def test_two_processes_share_one_study(tmp_path):
    storage = f"sqlite:///{tmp_path / 'gpg.db'}"
    command = [sys.executable, "-m", "sb3_gpg.train", *OPTIMIZE, "--n-trials", "2", "--storage", storage]
    workers = [subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for _ in range(2)]
    outputs = [worker.communicate(timeout=300)[0].decode() for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0], "\n".join(output[-2000:] for output in outputs)
    study = optuna.load_study(study_name="cartpole", storage=storage)
    assert len(study.trials) == 4
    # Each process finished its own two trials (its summary counts the study's trials at its end)
    assert all("Number of finished trials" in output for output in outputs)


def as_text(hyperparams):
    """Values as text: a learning-rate schedule equals another by what it computes, which repr shows."""
    return {name: repr(value) for name, value in hyperparams.items()}


def test_sampled_hyperparameters_are_always_valid():
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for n_envs in (1, 3, 16):
        env = make_vec_env("CartPole-v1", n_envs=n_envs)
        for _ in range(15):
            trial = study.ask()
            hyperparams = sample_gpg_params(trial, n_actions=2, n_envs=n_envs, additional_args={})
            assert (hyperparams["n_steps"] * n_envs) % hyperparams["batch_size"] == 0
            assert hyperparams["n_steps"] * n_envs <= 2**MAX_ROLLOUT_POW or hyperparams["n_steps"] == 1
            GPG("MlpPolicy", env, **hyperparams)  # raises on any invalid combination
            # What Optuna stores converts back to the same values (as RL Zoo does for --trial-id and best trials), the
            # sampled baseline with its own default arguments, not the entry's (which may be another baseline's)
            converted = convert_gpg_params({**trial.params, "n_envs": n_envs})
            assert hyperparams["baseline_kwargs"] is None
            assert as_text(converted) == as_text({"n_envs": n_envs, **hyperparams})
            study.tell(trial, 0.0)


def test_sampled_rollout_scales_only_box_observations():
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    box, discrete = gym.make("CartPole-v1").observation_space, spaces.Discrete(48)
    sampled = [sample_gpg_rollout(study.ask(), box) for _ in range(30)]
    assert {rollout["n_envs"] for rollout in sampled} == {4, 8, 16, 32, 64}
    assert {rollout["normalize"] for rollout in sampled} == {False, True}
    assert all("normalize" not in sample_gpg_rollout(study.ask(), discrete) for _ in range(5))


def test_search_leaves_spatial_binnings_out_for_image_observations():
    assert searched_binnings(gym.make("CartPole-v1").observation_space) == SEARCHED_BINNINGS
    assert "spatial_time" in SEARCHED_BINNINGS
    car_racing = spaces.Box(0, 255, (96, 96, 3), np.uint8)  # RGB observations
    assert searched_binnings(car_racing) == ("time", "universal")
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    sampled = [sample_gpg_params(study.ask(), 2, 1, {}, binnings=searched_binnings(car_racing)) for _ in range(20)]
    assert {hyperparams["binning"] for hyperparams in sampled} == {"time", "universal"}
