"""RL Zoo integration: the CLI end to end in a temporary folder, the YAML, the Optuna sampler and the one-line errors."""

import argparse
import inspect
import os
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import optuna
import pytest
import torch as th
import yaml
from gymnasium import spaces
from rl_zoo3 import enjoy as zoo_enjoy
from rl_zoo3 import record_training as zoo_record_training
from rl_zoo3 import train as zoo_train
from rl_zoo3.callbacks import TrialEvalCallback
from rl_zoo3.exp_manager import ExperimentManager
from stable_baselines3.common.callbacks import EvalCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecNormalize, sync_envs_normalization

import sb3_gpg.zoo
from sb3_gpg import GPG
from sb3_gpg.zoo import (
    GPG_ALGOS,
    GPG_HYPERPARAMS,
    ZooError,
    commands,
    convert_gpg_params,
    main,
    register_gpg,
    run,
    sample_gpg_params,
    sample_gpg_rollout,
    searched_binnings,
)
from sb3_gpg.zoo.commands import _experiment_manager, _take_own_arguments
from sb3_gpg.zoo.experiment import EnvPoolExperimentManager, ZooExperimentManager
from sb3_gpg.zoo.extensions import WindowedTrialEvalCallback, replaced
from sb3_gpg.zoo.registry import MAX_ROLLOUT_POW, SEARCHED_BINNINGS

QUICK_TRAIN = ["--env", "CartPole-v1", "-n", "2048", "--eval-freq", "1024", "--eval-episodes", "2", "--seed", "0"]


def evaluated_at(run_folder) -> list[int]:
    """
    :return: the steps at which the run's EvalCallback evaluated, after checking each result is a whole CartPole episode
    """
    evaluations = np.load(run_folder / "evaluations.npz")
    assert ((evaluations["results"] >= 8) & (evaluations["results"] <= 500)).all()  # no CartPole episode is shorter
    return evaluations["timesteps"].tolist()


def cli(*args, cwd, check=True):
    result = subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    if check:
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


@pytest.mark.slow
def test_train_then_enjoy_record_and_plot(tmp_path):
    cli("sb3_gpg.train", "--algo", "gpg", *QUICK_TRAIN, "-f", "logs", "--save-freq", "1024", cwd=tmp_path)
    run_folder = tmp_path / "logs" / "gpg" / "CartPole-v1_1"
    assert (run_folder / "CartPole-v1.zip").exists()
    # --eval-freq counts all envs' steps (rl_zoo3 divides it by n_envs, 8 in the entry)
    assert evaluated_at(run_folder) == [1024, 2048]
    # The run used sb3_gpg's YAML entry
    saved = yaml.load((run_folder / "CartPole-v1" / "config.yml").read_text(), Loader=yaml.UnsafeLoader)
    assert dict(saved)["n_envs"] == yaml.safe_load(GPG_HYPERPARAMS.read_text())["CartPole-v1"]["n_envs"]

    result = cli(
        "sb3_gpg.enjoy", "--algo", "gpg", "--env", "CartPole-v1", "-f", "logs", "--no-render", "-n", "300", cwd=tmp_path
    )
    assert "Mean reward" in result.stdout or "Episode Reward" in result.stdout

    cli("sb3_gpg.record_video", "--algo", "gpg", "--env", "CartPole-v1", "-f", "logs", "-n", "50", cwd=tmp_path)
    assert list((run_folder / "videos").glob("*.mp4"))

    # Its record_video subprocesses are sent to sb3_gpg.record_video; captions need ffmpeg (imageio-ffmpeg's if none)
    cli("sb3_gpg.record_training", "--algo", "gpg", "--env", "CartPole-v1", "-f", "logs", "-n", "20", cwd=tmp_path)
    assert (run_folder / "videos" / "training.mp4").exists()

    cli(
        "sb3_gpg.plots",
        "train",
        "--algo",
        "gpg",
        "--env",
        "CartPole-v1",
        "-f",
        "logs",
        "-w",
        "5",
        "--png",
        "curve.png",
        cwd=tmp_path,
    )
    assert (tmp_path / "curve.png").stat().st_size > 10_000
    # rl_zoo3's default window (100 episodes) is longer than this run: smoothed over its episodes instead, and said so
    result = cli("sb3_gpg.plots", "train", "--algo", "gpg", "--env", "CartPole-v1", "-f", "logs", "--png", "default.png",
                 cwd=tmp_path)  # fmt: skip
    assert "fewer than rl_zoo3's window of 100: smoothing over" in result.stdout
    assert (tmp_path / "default.png").stat().st_size > 10_000
    result = cli("sb3_gpg.plots", "train", "--algo", "gpg", "--env", "CartPole-v1", "-f", "logs", "-w", "1000", "--png",
                 "long.png", cwd=tmp_path, check=False)  # fmt: skip
    assert result.returncode != 0 and "-w 1000 is longer than run CartPole-v1_1" in result.stderr
    assert not (tmp_path / "long.png").exists()


def test_an_env_without_an_entry_gets_the_default_group(tmp_path):
    # RL Zoo's own default would be a single env: a group of one trajectory per bin
    cli("sb3_gpg.train", "--algo", "gpg", "--env", "MountainCar-v0", "-n", "4096", "-f", "logs", cwd=tmp_path)
    config = (tmp_path / "logs" / "gpg" / "MountainCar-v0_1" / "MountainCar-v0" / "config.yml").read_text()
    saved = dict(yaml.load(config, Loader=yaml.UnsafeLoader))
    assert (saved["n_envs"], saved["n_steps"], saved["batch_size"]) == (8, 512, 128)


def test_yaml_env_kwargs_reach_the_evaluation_env(tmp_path):
    # CliffWalking's entry sets a time limit through env_kwargs; without it in rl_zoo3's eval env, evaluating a policy
    # that does not reach the goal would never end (the subprocess timeout would fail this test)
    cli(
        "sb3_gpg.train",
        "--algo",
        "gpg",
        "--env",
        "CliffWalking-v1",
        "-n",
        "2048",
        "--eval-freq",
        "1024",
        "-f",
        "logs",
        cwd=tmp_path,
    )
    run_folder = tmp_path / "logs" / "gpg" / "CliffWalking-v1_1"
    assert np.load(run_folder / "evaluations.npz")["results"].shape[0] == 2
    saved_args = yaml.load((run_folder / "CliffWalking-v1" / "args.yml").read_text(), Loader=yaml.UnsafeLoader)
    assert dict(saved_args)["env_kwargs"] == {"max_episode_steps": 100}


# One valid action per state, and it is the right one: with masks every step scores, without them about one in ten
MASKED_IDENTITY_PACKAGE = """
import gymnasium as gym
from sb3_contrib.common.envs import InvalidActionEnvDiscrete

gym.register("MaskedIdentity-v0", lambda: InvalidActionEnvDiscrete(dim=10, ep_length=20, n_invalid_actions=9))
"""


def test_maskable_gpg_trains_evaluates_and_enjoys_with_masks(tmp_path):
    (tmp_path / "masked_identity.py").write_text(MASKED_IDENTITY_PACKAGE)
    env = ["--env", "MaskedIdentity-v0", "--gym-packages", "masked_identity", "-f", "logs"]
    cli("sb3_gpg.train", "--algo", "gpg_mask", *env, "-n", "512", "--eval-freq", "256", "--eval-episodes", "2", cwd=tmp_path)
    run_folder = tmp_path / "logs" / "gpg_mask" / "MaskedIdentity-v0_1"
    assert (run_folder / "MaskedIdentity-v0.zip").exists()
    np.testing.assert_array_equal(np.load(run_folder / "evaluations.npz")["results"], 20.0)  # evaluated with masks
    result = cli("sb3_gpg.enjoy", "--algo", "gpg_mask", *env, "--no-render", "-n", "100", cwd=tmp_path)
    episode_rewards = [float(line.split(":")[1]) for line in result.stdout.splitlines() if line.startswith("Episode Reward")]
    assert episode_rewards == [20.0] * 5  # played with masks


@pytest.mark.slow
def test_recurrent_gpg_trains_and_enjoys(tmp_path):
    env = ["--env", "CartPoleNoVel-v1", "-f", "logs"]
    cli("sb3_gpg.train", "--algo", "gpg_lstm", *env, "-n", "4096", "--eval-freq", "2048", "--eval-episodes", "2", cwd=tmp_path)
    run_folder = tmp_path / "logs" / "gpg_lstm" / "CartPoleNoVel-v1_1"
    assert evaluated_at(run_folder) == [2048, 4096]
    saved = yaml.load((run_folder / "CartPoleNoVel-v1" / "config.yml").read_text(), Loader=yaml.UnsafeLoader)
    assert dict(saved)["n_steps"] == 256  # sb3_gpg's gpg_lstm.yml entry
    result = cli("sb3_gpg.enjoy", "--algo", "gpg_lstm", *env, "--no-render", "-n", "200", cwd=tmp_path)
    assert "Episode Reward" in result.stdout


def test_ppo_through_the_same_entry_point(tmp_path):
    cli("sb3_gpg.train", "--algo", "ppo", *QUICK_TRAIN, "-f", "logs", "--eval-seed", "1000", cwd=tmp_path)
    run_folder = tmp_path / "logs" / "ppo" / "CartPole-v1_1"
    assert (run_folder / "CartPole-v1.zip").exists()
    saved_args = yaml.load((run_folder / "CartPole-v1" / "args.yml").read_text(), Loader=yaml.UnsafeLoader)
    assert dict(saved_args)["eval_seed"] == 1000


@pytest.mark.parametrize("algo", ["gpg", "ppo"])
def test_eval_seed_seeds_the_evaluation_envs_apart_from_training(tmp_path, algo):
    def seeded(seed, n_envs):
        return np.stack([gym.make("CartPole-v1").reset(seed=seed + rank)[0] for rank in range(n_envs)])

    kwargs = dict(seed=3, verbose=0)
    zoo = ZooExperimentManager(argparse.Namespace(), algo, "CartPole-v1", str(tmp_path), **kwargs)
    # rl_zoo3's own: the evaluation envs start where the training envs do
    np.testing.assert_array_equal(zoo.create_envs(2, eval_env=True).reset(), seeded(3, 2))
    args = argparse.Namespace()
    manager = ZooExperimentManager(args, algo, "CartPole-v1", str(tmp_path), eval_seed=1003, **kwargs)
    np.testing.assert_array_equal(manager.create_envs(2, eval_env=True).reset(), seeded(1003, 2))
    np.testing.assert_array_equal(manager.create_envs(2, no_log=True).reset(), seeded(3, 2))
    assert manager.seed == 3 and args.eval_seed == 1003


def test_own_arguments_are_taken_before_rl_zoo3_reads_the_arguments():
    def taken(argv):
        own, rest = _take_own_arguments(argv)
        return own.eval_seed, own.trial_score_window, rest

    argv = ["--algo", "ppo", "-optimize", "--eval-seed", "7", "--seed", "2", "--trial-score-window", "3"]
    assert taken(argv) == (7, 3, ["--algo", "ppo", "-optimize", "--seed", "2"])
    assert taken(["--eval-seed=8"]) == (8, 1, [])
    assert taken(["--eval-freq", "10"]) == (None, 1, ["--eval-freq", "10"])


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


@pytest.mark.parametrize("algo", ["gpg", "ppo"])
def test_train_on_envpool_evaluate_on_gymnasium(tmp_path, algo):
    pytest.importorskip("envpool")
    cli("sb3_gpg.train", "--algo", algo, *QUICK_TRAIN, "-f", "logs", "--vec-env", "envpool", cwd=tmp_path)
    run_folder = tmp_path / "logs" / algo / "CartPole-v1_1"
    assert (run_folder / "CartPole-v1.zip").exists()
    assert evaluated_at(run_folder) == [1024, 2048]
    # The training episodes are in the run's monitor.csv, which plots train reads
    assert len((run_folder / "monitor.csv").read_text().splitlines()) > 10


@pytest.mark.parametrize("command, hint", [("foo", ""), ("trian", " (did you mean 'train'?)")])
def test_unknown_command_is_named(command, hint):
    with pytest.raises(SystemExit) as exit_info:
        main([command])
    assert str(exit_info.value).startswith(f"sb3-gpg: error: {command!r} is not a command{hint}; choose from train, enjoy")


@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_console_script_help(flag, capsys):
    main([flag])
    assert capsys.readouterr().out.startswith("usage: sb3-gpg {train,enjoy,record_video,record_training,plots}")


def test_console_script_trains(tmp_path):
    result = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "sb3-gpg"), "train", "--algo", "gpg", *QUICK_TRAIN, "-f", "logs"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "logs" / "gpg" / "CartPole-v1_1" / "CartPole-v1.zip").exists()


OPTIMIZE = [
    "--algo", "gpg", "--env", "CartPole-v1", "-optimize", "-n", "1024", "--n-evaluations", "1", "--eval-episodes", "2",
    "--study-name", "cartpole", "-f", "logs",
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


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--algo", "gpg", "--env", "CartPol-v1"], "Unknown environment 'CartPol-v1': did you mean 'CartPole-v1'?"),
        (["--algo", "gpg", "--env", "Acrobot-v1", "-conf", "{conf}"], "Hyperparameters not found for gpg-Acrobot-v1 in"),
        (
            ["--algo", "gpg", "--env", "CartPole-v1", "-conf", "{conf}"],
            "GPG does not know 'gae_lamda' (did you mean 'gae_lambda'?)",
        ),
        (["--algo", "gpg", "--env", "CartPole-v1", "-params", "binning:'tim'"], "Unknown binning 'tim'"),
        (["--algo", "gpg", "--env", "CartPole-v1", "-params", "bin_size:-1.0"], "bin_size must be positive"),
        (["--algo", "ppo", "--env", "Taxi-v4", "--vec-env", "envpool"], "EnvPool has no environment"),
        (["--algo", "gpg", "-optimize", "--trial-score-window", "0"], "--trial-score-window 0: a trial's score is the mean"),
        (["--algo", "gpg", "--trial-score-window", "2"], "--trial-score-window 2 scores the trials of a search: add"),
    ],
)
def test_bad_input_gives_one_line_error(tmp_path, argv, message):
    conf = tmp_path / "conf.yml"
    conf.write_text("CartPole-v1:\n  n_timesteps: 1000\n  policy: MlpPolicy\n  gae_lamda: 0.9\n")
    argv = [arg.format(conf=conf) for arg in argv]
    result = cli("sb3_gpg.train", *argv, "-f", "logs", cwd=tmp_path, check=False)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [result.stderr.strip()], result.stderr  # one line, no traceback
    assert message in result.stderr
    assert not (tmp_path / "logs").exists()  # nothing ran


def test_default_conf_is_sb3_gpg_yaml_and_other_algos_are_left_alone(tmp_path):
    args = argparse.Namespace()
    assert ZooExperimentManager(args, "gpg", "CartPole-v1", str(tmp_path)).config == str(GPG_HYPERPARAMS)
    assert args.conf_file == str(GPG_HYPERPARAMS)  # saved in args.yml
    ppo = ZooExperimentManager(argparse.Namespace(), "ppo", "CartPole-v1", str(tmp_path))
    assert ppo.config == ExperimentManager(argparse.Namespace(), "ppo", "CartPole-v1", str(tmp_path)).config
    manager = ZooExperimentManager(argparse.Namespace(), "gpg", "CartPole-v1", str(tmp_path), hyperparams={"vf_coeff": 0.5})
    with pytest.raises(ZooError, match="GPG does not know 'vf_coeff'"):
        manager.read_hyperparameters()


ENTRIES = [
    (algo, env_id, entry)
    for algo, (_, path) in GPG_ALGOS.items()
    for env_id, entry in yaml.safe_load(path.read_text()).items()
    if env_id != "default"
]


@pytest.mark.parametrize("algo, env_id, entry", ENTRIES, ids=[f"{algo}-{env_id}" for algo, env_id, _ in ENTRIES])
def test_every_yaml_entry_builds_a_model(tmp_path, algo, env_id, entry):
    try:
        gym.make(env_id).close()
    except (gym.error.DependencyNotInstalled, ModuleNotFoundError, ImportError) as error:
        pytest.skip(f"{env_id} is not installed here: {error}")
    register_gpg()
    algorithm, _ = GPG_ALGOS[algo]
    manager = ZooExperimentManager(argparse.Namespace(), algo, env_id, str(tmp_path), verbose=0, eval_freq=-1)
    model, _ = manager.setup_experiment()
    assert type(model) is algorithm
    assert model.n_envs == entry.get("n_envs", 1)
    if algo == "gpg_mask":
        model.learn(model.n_steps * model.n_envs)  # its env gives action masks
    model.env.close()


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


COMMAND_HELP = [
    ("train", []),
    ("enjoy", []),
    ("record_video", []),
    ("record_training", []),
    ("plots", ["train"]),
    ("plots", ["all"]),
]


@pytest.mark.parametrize("command, before", COMMAND_HELP, ids=[" ".join([c, *b]) for c, b in COMMAND_HELP])
# This module imports rl_zoo3.record_training, which the command runs as __main__ (a new process has not imported it)
@pytest.mark.filterwarnings("ignore:'rl_zoo3.record_training' found in sys.modules:RuntimeWarning")
def test_each_command_s_help_names_it(command, before, capsys):
    with pytest.raises(SystemExit) as exit_info:
        run(command, [*before, "--help"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: {' '.join(['sb3-gpg', command, *before])} ")


def test_python_m_names_its_module_in_the_help(capsys):
    with pytest.raises(SystemExit):
        run("train", ["--help"], program="python -m sb3_gpg.train")
    assert capsys.readouterr().out.startswith("usage: python -m sb3_gpg.train ")


def test_train_help_lists_sb3_gpg_s_options_and_defaults(capsys):
    with pytest.raises(SystemExit):
        run("train", ["--help"])
    help_text = " ".join(capsys.readouterr().out.split())  # argparse wraps the help lines
    assert "--vec-env {dummy,subproc,envpool}" in help_text
    assert "torch threads (default: 1: a small MLP" in help_text and "-1 or 0: torch's default" in help_text
    assert "--eval-seed EVAL_SEED seed of the evaluation envs" in help_text
    assert "--trial-score-window TRIAL_SCORE_WINDOW with -optimize" in help_text


class Built(Exception):
    """Raised where rl_zoo3's train builds its ExperimentManager: what train set up until then, without training."""


@pytest.fixture
def built(monkeypatch):
    """:return: run train up to its ExperimentManager: the manager's keyword arguments and the torch threads then"""

    def build(*_, **kwargs):
        raise Built(kwargs, th.get_num_threads())

    monkeypatch.setattr(commands, "_experiment_manager", build)

    def train_until_built(*argv):
        with pytest.raises(Built) as built_info:
            run("train", ["--algo", "gpg", *argv])
        return built_info.value.args

    threads = th.get_num_threads()
    yield train_until_built
    th.set_num_threads(threads)


def test_train_runs_on_one_torch_thread_unless_told_otherwise(built, capsys):
    th.set_num_threads(2)
    assert built()[1] == 1
    assert built("--num-threads", "3")[1] == 3
    assert built("--num-threads", "-1")[1] == 3  # torch's default: left as it is
    assert "sb3-gpg train" not in capsys.readouterr().err


def test_train_takes_vec_env_envpool_as_rl_zoo3_s_option(built, tmp_path):
    pytest.importorskip("envpool")
    assert built("--vec-env", "envpool")[0]["vec_env_type"] == "envpool"
    # the ExperimentManager it then builds: EnvPool's, which hands rl_zoo3 a VecEnv type it knows
    manager = _experiment_manager(argparse.Namespace(), "ppo", "CartPole-v1", str(tmp_path), vec_env_type="envpool")
    assert isinstance(manager, EnvPoolExperimentManager)


@pytest.mark.parametrize("normalize", [False, True])
def test_envpool_training_and_gymnasium_evaluation_envs_suit_sb3_s_eval_callback(tmp_path, normalize):
    pytest.importorskip("envpool")
    manager = EnvPoolExperimentManager(
        argparse.Namespace(), "gpg", "CartPole-v1", str(tmp_path), hyperparams={"normalize": normalize}, eval_freq=100,
        verbose=0,
    )  # fmt: skip
    model, _ = manager.setup_experiment()
    (callback,) = [callback for callback in manager.callbacks if isinstance(callback, EvalCallback)]
    with warnings.catch_warnings():
        warnings.filterwarnings("error", "Training and eval env are not of the same type")
        callback.init_callback(model)
    # Each wrapper of the training envs has its counterpart in the evaluation envs': VecNormalize's statistics copy
    sync_envs_normalization(model.get_env(), callback.eval_env)
    assert isinstance(model.get_vec_normalize_env(), VecNormalize) is normalize


def test_a_missing_rl_zoo3_names_the_extra(monkeypatch):
    # As in an install without the zoo extra: every rl_zoo3 module unimportable, and sb3_gpg.zoo's modules that import
    # it not imported yet
    for name in [name for name in sys.modules if name == "rl_zoo3" or name.startswith("rl_zoo3.")]:
        monkeypatch.setitem(sys.modules, name, None)
    for name in ("commands", "experiment", "extensions"):
        monkeypatch.delitem(sys.modules, f"sb3_gpg.zoo.{name}")
        monkeypatch.delattr(sb3_gpg.zoo, name)
    with pytest.raises(SystemExit) as exit_info:
        run("train", ["--algo", "gpg"])
    assert str(exit_info.value) == (
        "sb3-gpg train: error: sb3-gpg train needs RL Zoo (no module named 'rl_zoo3'): pip install 'sb3-gpg[zoo]'"
    )


@pytest.mark.parametrize(
    "command, argv, message",
    [
        (
            "enjoy",
            ["--algo", "gpg"],
            "The rl-trained-agents/gpg folder was not found (no run of gpg on CartPole-v1 in rl-trained-agents/gpg): "
            "pass -f with the folder sb3-gpg train wrote to (its -f, logs by default)",
        ),
        ("enjoy", ["--algo", "ppo"], "or set TRUST_REMOTE_CODE=True to download RL Zoo's pretrained ppo agent"),
        (
            "enjoy",
            ["--algo", "gpg", "-f", "logs"],
            "No model found for gpg on CartPole-v1, path: logs/gpg/CartPole-v1_2/CartPole-v1.zip (runs in logs/gpg: "
            "CartPole-v1_1, CartPole-v1_2): check -f, --algo, --env and --exp-id (0: the latest run)",
        ),
        ("record_video", ["--algo", "gpg", "-f", "logs", "--exp-id", "3"], "The logs/gpg/CartPole-v1_3 folder was not"),
        ("record_video", ["--algo", "gpg", "-f", "logs", "--exp-id", "1"], "No model found for gpg on CartPole-v1"),
    ],
)
def test_no_model_to_load_is_one_line_naming_what_to_pass(command, argv, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TRUST_REMOTE_CODE", raising=False)
    for run_id in (1, 2):  # runs without a model, as a training stopped early leaves
        (tmp_path / "logs" / "gpg" / f"CartPole-v1_{run_id}").mkdir(parents=True)
    with pytest.raises(SystemExit) as exit_info:
        run(command, [*argv, "--no-render"] if command == "enjoy" else argv)
    assert str(exit_info.value).startswith(f"sb3-gpg {command}: error: ")
    assert message in str(exit_info.value) and "\n" not in str(exit_info.value)


# What rl_zoo3 does that sb3_gpg.zoo works around: when one of these fails, rl_zoo3 changed and the workaround named
# in its comment may be dropped or needs another way


def test_rl_zoo3_train_reads_argv_and_builds_the_experiment_manager_its_module_names():
    class Built(Exception):
        pass

    def manager(args, algo, env_id, *_, **__):
        raise Built(f"{algo} {env_id}")

    with (
        replaced(vars(zoo_train), "ExperimentManager", manager),
        replaced(vars(sys), "argv", ["train", "--algo", "ppo", "--env", "Acrobot-v1"]),
        pytest.raises(Built, match="ppo Acrobot-v1"),
    ):
        zoo_train.train()


def test_rl_zoo3_train_accepts_dummy_and_subproc_vec_envs_only(capsys):
    with replaced(vars(sys), "argv", ["train", "--vec-env", "envpool"]), pytest.raises(SystemExit):
        zoo_train.train()
    assert "invalid choice: 'envpool'" in capsys.readouterr().err


def test_rl_zoo3_evaluates_without_the_entry_env_kwargs_and_without_action_masks(tmp_path):
    register_gpg()
    kwargs = dict(config=str(GPG_HYPERPARAMS), eval_freq=100, verbose=0)
    zoo_args, sb3_gpg_args = argparse.Namespace(env_kwargs=None), argparse.Namespace(env_kwargs=None)
    zoo = ExperimentManager(zoo_args, "gpg", "CliffWalking-v1", str(tmp_path / "zoo"), **kwargs)
    zoo.setup_experiment()
    assert zoo.env_kwargs == {"max_episode_steps": 100}
    assert zoo.eval_env_kwargs == {} and zoo_args.env_kwargs is None
    assert type(zoo.callbacks[-1]) is EvalCallback  # SB3's: it predicts without action masks
    manager = ZooExperimentManager(sb3_gpg_args, "gpg", "CliffWalking-v1", str(tmp_path / "sb3_gpg"), **kwargs)
    manager.setup_experiment()
    assert manager.eval_env_kwargs == sb3_gpg_args.env_kwargs == {"max_episode_steps": 100}


def test_rl_zoo3_enjoy_predicts_without_action_masks_in_the_env_its_module_creates():
    source = inspect.getsource(zoo_enjoy.enjoy)
    assert "env = create_test_env(" in source and "model.predict(" in source
    assert "action_masks" not in source


def test_rl_zoo3_record_training_runs_python_and_ffmpeg_from_the_path():
    source = inspect.getsource(zoo_record_training)
    assert 'subprocess.call(["python", "-m", "rl_zoo3.record_video"' in source
    assert 'os.system(f"ffmpeg ' in source
