"""RL Zoo integration: the CLI end to end in a temporary folder, the YAML entries, the help and the one-line errors."""

import argparse
import ast
import importlib.util
import os
import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch as th
import yaml
from rl_zoo3.exp_manager import ExperimentManager
from stable_baselines3.common.callbacks import EvalCallback
from stable_baselines3.common.vec_env import VecNormalize, sync_envs_normalization

import sb3_gpg.zoo
from sb3_gpg import GPG
from sb3_gpg.common.env_util import VEC_ENVS
from sb3_gpg.zoo import (
    GPG_ALGOS,
    GPG_HYPERPARAMS,
    ZooError,
    commands,
    main,
    register_gpg,
    run,
)
from sb3_gpg.zoo import cli as zoo_cli
from sb3_gpg.zoo.commands import _experiment_manager, _take_own_arguments
from sb3_gpg.zoo.experiment import EnvPoolExperimentManager, ZooExperimentManager
from tests.helpers import cli

NEEDS_ENVPOOL = pytest.mark.skipif(importlib.util.find_spec("envpool") is None, reason="envpool is not installed")

QUICK_TRAIN = ["--env", "CartPole-v1", "-n", "2048", "--eval-freq", "1024", "--eval-episodes", "2", "--seed", "0"]


def evaluated_at(run_folder) -> list[int]:
    """
    :return: the steps at which the run's EvalCallback evaluated, after checking each result is a whole CartPole episode
    """
    evaluations = np.load(run_folder / "evaluations.npz")
    assert ((evaluations["results"] >= 8) & (evaluations["results"] <= 500)).all()  # no CartPole episode is shorter
    return evaluations["timesteps"].tolist()


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

    if importlib.util.find_spec("moviepy") is None:  # the MP4s' writer; what came before needs none of it
        pytest.skip("moviepy is not installed (an optional extra): trained, enjoyed and plotted, no video recorded")
    cli("sb3_gpg.record_video", "--algo", "gpg", "--env", "CartPole-v1", "-f", "logs", "-n", "50", cwd=tmp_path)
    assert list((run_folder / "videos").glob("*.mp4"))
    # Its record_video subprocesses are sent to sb3_gpg.record_video; captions need ffmpeg (imageio-ffmpeg's if none)
    cli("sb3_gpg.record_training", "--algo", "gpg", "--env", "CartPole-v1", "-f", "logs", "-n", "20", cwd=tmp_path)
    assert (run_folder / "videos" / "training.mp4").exists()


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
        own, rest = _take_own_arguments(argv, "sb3-gpg train")
        return own.eval_seed, own.trial_score_window, rest

    argv = ["--algo", "ppo", "-optimize", "--eval-seed", "7", "--seed", "2", "--trial-score-window", "3"]
    assert taken(argv) == (7, 3, ["--algo", "ppo", "-optimize", "--seed", "2"])
    assert taken(["--eval-seed=8"]) == (8, 1, [])
    assert taken(["--eval-freq", "10"]) == (None, 1, ["--eval-freq", "10"])


def test_own_arguments_errors_name_the_command(capsys):
    with pytest.raises(SystemExit):
        _take_own_arguments(["--eval-seed", "abc"], "sb3-gpg train")
    assert capsys.readouterr().err.splitlines()[-1] == "sb3-gpg train: error: argument --eval-seed: invalid int value: 'abc'"


@pytest.mark.parametrize("algo", ["gpg", "ppo"])
def test_train_on_envpool_evaluate_on_gymnasium(tmp_path, algo):
    pytest.importorskip("envpool")
    cli("sb3_gpg.train", "--algo", algo, *QUICK_TRAIN, "-f", "logs", "--vec-env", "envpool", cwd=tmp_path)
    run_folder = tmp_path / "logs" / algo / "CartPole-v1_1"
    assert (run_folder / "CartPole-v1.zip").exists()
    assert evaluated_at(run_folder) == [1024, 2048]
    # The training episodes are in the run's monitor.csv, which plots train reads
    assert len((run_folder / "monitor.csv").read_text().splitlines()) > 10


def refused(capsys, function, *args) -> str:
    """:return: the error line that function(*args) printed, having exited with argparse's status for a bad option"""
    with pytest.raises(SystemExit) as exit_info:
        function(*args)
    assert exit_info.value.code == 2  # as argparse exits on a bad option, and python -m sb3_gpg on an unknown env
    return capsys.readouterr().err.splitlines()[-1]


@pytest.mark.parametrize("command, hint", [("foo", ""), ("trian", " (did you mean 'train'?)")])
def test_unknown_command_is_named(command, hint, capsys):
    message = refused(capsys, main, [command])
    assert message.startswith(f"sb3-gpg: error: {command!r} is not a command{hint}; choose from train, enjoy")


def test_no_command_is_a_usage_error(capsys):
    assert refused(capsys, main, []) == "sb3-gpg: error: give a command: train, enjoy, record_video, record_training, plots"


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
        (["--algo", "gpg", "--env", "CartPole-v1", "-params", "n_steps:0"], "n_steps * n_envs must be greater than 1"),
        (["--algo", "gpg_lstm", "--env", "CartPole-v1", "-params", "learning_rate:-1.0"], "learning rate must be positive"),
        (["--algo", "gpg", "--env", "CartPole-v1", "--num-threads", "-5"], "--num-threads -5: pass a number of torch threads"),
        (["--algo", "gpg", "--env", "CartPole-v1", "-n", "0"], "-n 0: pass a number of training steps"),
        (["--algo", "gpg", "--env", "CartPole-v1", "-params", "learning_rate:'3e-4'"], "It is text: YAML reads a number"),
        (["--algo", "gpg", "--env", "CartPole-v1", "-params", "ent_coef:'1e-2'"], "ent_coef='1e-2' must be a number. It is"),
        (["--algo", "gpg", "--env", "CartPole-v1", "--eval-seed", "-1"], "--eval-seed -1: Gymnasium seeds an env with 0"),
        (
            ["--algo", "gpg_lstm", "--env", "CartPole-v1", "-params", "policy:'MlpPolicy'"],
            "MlpPolicy is GPG's policy: use GPG (MaskableGPG with action masks), or RecurrentGPG's MlpLstmPolicy. (GPG is "
            "--algo gpg,",
        ),
        (["--algo", "gpg", "--env", "CartPole-v1", "--n-timesteps", "-5"], "-n -5: pass a number of training steps"),
        pytest.param(
            ["--algo", "ppo", "--env", "Taxi-v4", "--vec-env", "envpool"], "EnvPool has no environment", marks=NEEDS_ENVPOOL
        ),
        (["--algo", "gpg", "-optimize", "--trial-score-window", "0"], "--trial-score-window 0: a trial's score is the mean"),
        (["--algo", "gpg", "--trial-score-window", "2"], "--trial-score-window 2 scores the trials of a search: add"),
        # not GPG's later n_steps * n_envs error
        (["--algo", "gpg", "-params", "n_envs:-1"], "-params: n_envs -1: the number of training envs must be an integer, 1"),
        (["--algo", "ppo", "-params", "n_envs:0"], "-params: n_envs 0: the number of training envs must be an integer, 1"),
        (["--algo", "gpg", "-conf", "{n_envs_conf}"], "for CartPole-v1: n_envs 0: the number of training envs must be"),
    ],
)
def test_bad_input_gives_one_line_error(tmp_path, argv, message):
    conf = tmp_path / "conf.yml"
    conf.write_text("CartPole-v1:\n  n_timesteps: 1000\n  policy: MlpPolicy\n  gae_lamda: 0.9\n")
    n_envs_conf = tmp_path / "n_envs.yml"
    n_envs_conf.write_text("CartPole-v1:\n  n_timesteps: 1000\n  policy: MlpPolicy\n  n_envs: 0\n")
    argv = [arg.format(conf=conf, n_envs_conf=n_envs_conf) for arg in argv]
    result = cli("sb3_gpg.train", *argv, "-f", "logs", cwd=tmp_path, check=False)
    assert result.returncode == 2  # argparse's status, as python -m sb3_gpg's
    if "n_envs" in " ".join(argv):  # the number of envs is checked before rl_zoo3 says "Using -1 environments"
        assert "environments" not in result.stdout
    assert result.stderr.strip().splitlines() == [result.stderr.strip()], result.stderr  # one line, no traceback
    assert message in result.stderr
    assert not (tmp_path / "logs").exists()  # nothing ran


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["--algo", "gpg", "--env", "FrozenLake-v1", "-params", "baseline:'linear'"],
            "for FrozenLake-v1 with -params: baseline='linear' fits the returns on the Box observations",
        ),
        (["--algo", "gpg_mask", "--env", "CartPole-v1"], "--algo gpg_mask reads action masks, which CartPole-v1's envs"),
    ],
)
def test_what_the_envs_cannot_serve_is_one_line_once_they_are_made(tmp_path, argv, message):
    result = cli("sb3_gpg.train", *argv, "-f", "logs", cwd=tmp_path, check=False)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()], result.stderr  # one line, no traceback
    assert message in result.stderr
    assert not list(tmp_path.glob("logs/*/*/*.zip"))  # nothing trained


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


@pytest.mark.filterwarnings("ignore:'rl_zoo3.record_training' found in sys.modules:RuntimeWarning")
def test_record_training_without_ffmpeg_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setattr(commands.shutil, "which", lambda name: None)  # no ffmpeg on the PATH
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)  # nor imageio-ffmpeg: its import fails
    with pytest.raises(SystemExit) as exit_info:
        run("record_training", ["--help"])  # the help needs neither
    assert exit_info.value.code == 0 and capsys.readouterr().out.startswith("usage: sb3-gpg record_training ")
    with pytest.raises(SystemExit) as exit_info:
        run("record_training", ["--algo", "gpg", "--env", "CartPole-v1", "-f", "logs"])
    assert exit_info.value.code == 2  # before rl_zoo3 records anything
    assert "none is on the PATH and imageio-ffmpeg is not installed. pip install moviepy" in capsys.readouterr().err


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


# What a help needs no more than the standard library for: none of these is imported before it is printed
HEAVY_MODULES = {"torch", "numpy", "gymnasium", "stable_baselines3", "sb3_contrib", "rl_zoo3", "optuna", "sb3_gpg.gpg"}


def imported_by(command: list[str]) -> tuple[subprocess.CompletedProcess, set[str]]:
    """:return: the command's result, and the modules it imported (Python's -X importtime, set in the environment)"""
    environment = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=environment)
    lines = [line for line in result.stderr.splitlines() if line.startswith("import time:")]
    return result, {line.rsplit("|", 1)[1].strip() for line in lines}


@pytest.mark.parametrize("argv", [["--help"], ["train", "--help"]])
def test_console_script_help_imports_neither_torch_nor_rl_zoo3(argv):
    result, imported = imported_by([os.path.join(os.path.dirname(sys.executable), "sb3-gpg"), *argv])
    assert result.returncode == 0 and result.stdout.startswith(f"usage: {' '.join(['sb3-gpg', *argv[:-1]])}")
    assert "sb3_gpg.zoo.cli" in imported and not HEAVY_MODULES & imported, sorted(HEAVY_MODULES & imported)


def test_train_help_is_rl_zoo3_s_own_read_without_importing_it(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "100")  # argparse wraps at the terminal's width
    with pytest.raises(SystemExit) as exit_info:
        run("train", ["--help"])
    quick = capsys.readouterr().out
    assert exit_info.value.code == 0 and "--algo {a2c,ddpg," in quick and ",gpg,gpg_mask,gpg_lstm,gpg_mask_lstm}" in quick
    register_gpg()
    with pytest.raises(SystemExit):
        commands.train(["--help"])  # rl_zoo3's train() itself parses
    assert quick == capsys.readouterr().out


def test_train_help_is_rl_zoo3_s_where_its_source_is_not_as_expected(monkeypatch, capsys):
    def source(statement):
        tree = ast.parse(
            f"def train():\n    parser = argparse.ArgumentParser()\n    {statement}\n    args = parser.parse_args()\n"
        )
        return lambda module: (Path("train.py"), tree)

    monkeypatch.setattr(zoo_cli, "_zoo_source", source("parser.add_argument('--env')"))
    assert zoo_cli._train_parser_builder() is not None
    monkeypatch.setattr(zoo_cli, "_zoo_source", source("print('more than a parser')"))
    assert zoo_cli._train_parser_builder() is None
    monkeypatch.setattr(zoo_cli, "_zoo_source", lambda module: None)  # rl_zoo3 not found
    zoo_cli.train_help(["--help"], "sb3-gpg train")  # returns, having printed nothing
    assert capsys.readouterr().out == ""
    with pytest.raises(SystemExit) as exit_info:
        run("train", ["--help"])  # then rl_zoo3's train() prints it
    assert exit_info.value.code == 0 and capsys.readouterr().out.startswith("usage: sb3-gpg train ")


def test_cli_s_copies_agree_with_the_modules_that_define_them():
    assert zoo_cli.GPG_ALGO_NAMES == tuple(GPG_ALGOS)
    assert zoo_cli.VEC_ENVS == VEC_ENVS


def test_algo_in_another_case_is_taken_where_it_names_one_algorithm():
    algos = ["ppo", "ppo_lstm", "gpg", "ab", "AB"]
    assert zoo_cli.algo_in_any_case(["--algo", "GPG", "--env", "PPO"], algos) == ["--algo", "gpg", "--env", "PPO"]
    assert zoo_cli.algo_in_any_case(["--algo=Ppo_LSTM"], algos) == ["--algo=ppo_lstm"]
    assert zoo_cli.algo_in_any_case(["--algo", "Ab"], algos) == ["--algo", "Ab"]  # two algorithms: rl_zoo3 refuses it
    assert zoo_cli.algo_in_any_case(["--algo", "AB", "--algo"], algos) == ["--algo", "AB", "--algo"]
    assert zoo_cli.algo_in_any_case(["--algo", "gpx"], algos) == ["--algo", "gpx"]


class Built(Exception):
    """Raised where rl_zoo3's train builds its ExperimentManager: what train set up until then, without training."""


@pytest.fixture
def built(monkeypatch):
    """
    :return: run train up to its ExperimentManager: the manager's keyword arguments, the torch threads then, and its
        positional arguments (rl_zoo3's args, the algo, the env id, the log folder)
    """

    def build(*args, **kwargs):
        raise Built(kwargs, th.get_num_threads(), args)

    monkeypatch.setattr(commands, "_experiment_manager", build)

    def train_until_built(*argv):
        with pytest.raises(Built) as built_info:
            run("train", ["--algo", "gpg", *argv])
        return built_info.value.args

    threads = th.get_num_threads()
    yield train_until_built
    th.set_num_threads(threads)


@pytest.mark.parametrize(
    "argv, algo", [(["--algo", "GPG"], "gpg"), (["--algo=Gpg_Lstm"], "gpg_lstm"), (["--algo", "PPO"], "ppo")]
)
def test_train_takes_algo_in_any_case(built, argv, algo):
    assert built(*argv)[2][1] == algo


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
    for argv in (["--algo", "gpg"], ["--help"]):  # the help too, which reads rl_zoo3's source where it is installed
        with pytest.raises(SystemExit) as exit_info:
            run("train", argv)
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
        ("enjoy", ["--algo", "gpg", "-f", "logs", "--n-envs", "0"], "--n-envs 0: play in 1 env (the default) or more"),
        # --algo in another case: the folder that train wrote
        ("enjoy", ["--algo", "GPG", "-f", "logs"], "No model found for gpg on CartPole-v1, path: logs/gpg/CartPole-v1_2"),
    ],
)
def test_no_model_to_load_is_one_line_naming_what_to_pass(command, argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TRUST_REMOTE_CODE", raising=False)
    for run_id in (1, 2):  # runs without a model, as a training stopped early leaves
        (tmp_path / "logs" / "gpg" / f"CartPole-v1_{run_id}").mkdir(parents=True)
    error = refused(capsys, run, command, [*argv, "--no-render"] if command == "enjoy" else argv)
    assert error.startswith(f"sb3-gpg {command}: error: ") and message in error


def test_another_gpg_classes_model_is_one_line_naming_its_algo(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    # a GPG run's model where --algo gpg_mask looks
    model = GPG("MlpPolicy", "CartPole-v1", n_steps=64, batch_size=64)
    model.save(tmp_path / "logs" / "gpg_mask" / "CartPole-v1_1" / "CartPole-v1")
    message = refused(capsys, run, "enjoy", ["--algo", "gpg_mask", "-f", "logs", "--no-render"])
    assert message.startswith("sb3-gpg enjoy: error: logs/gpg_mask/CartPole-v1_1/CartPole-v1.zip holds a model saved by GPG")
    assert "(on the command line, GPG is --algo gpg, MaskableGPG is --algo gpg_mask," in message
