"""
The main job's command line (``python -m sb3_gpg``): its help and its errors, without training.
"""

import os
import re
import subprocess
import sys

import pytest

import sb3_gpg
import sb3_gpg.__main__
from sb3_gpg.__main__ import main


def test_help_is_plain_text_with_every_default(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    help_text = capsys.readouterr().out
    assert "``" not in help_text, "reStructuredText markup in the help"
    flat = re.sub(r"\s+", " ", help_text)  # argparse wraps the help lines
    for default in ("CartPole-v1", "50000", "auto", "time", "dummy", "20"):
        assert f"(default: {default})" in flat, default
    assert "(default: 0)" in flat.split("--seed SEED", 1)[1]


def refused(argv, capsys):
    """:return: what main(argv) printed, having exited with argparse's status for a bad option"""
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2  # as argparse exits on a bad option
    return capsys.readouterr()


@pytest.mark.parametrize(
    "env_id, message",
    [
        ("CartPol-v1", "Unknown environment 'CartPol-v1': did you mean 'CartPole-v1'?"),
        ("NoSuchTaskAtAll-v0", "Unknown environment 'NoSuchTaskAtAll-v0'."),
    ],
)
def test_unknown_env_is_one_line_with_argparse_status(env_id, message, capsys):
    captured = refused(["--env", env_id], capsys)
    assert captured.err == f"python -m sb3_gpg: error: {message}\n"
    assert captured.out == "", "nothing is trained or printed before the check"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--timesteps", "-5"], "argument --timesteps: must be at least 1, got -5"),
        (["--num-threads", "-5"], "argument --num-threads: must be at least -1, got -5"),
        (["--timesteps", "0"], "argument --timesteps: must be at least 1, got 0"),
        (["--n-envs", "0"], "argument --n-envs: must be at least 1, got 0"),
        (["--eval-episodes", "0"], "argument --eval-episodes: must be at least 1, got 0"),
        (["--seed", "-1"], "argument --seed: must be at least 0, got -1"),
        (["--n-envs", "two"], "argument --n-envs: must be an integer, got 'two'"),
    ],
)
def test_a_value_out_of_range_is_an_argparse_error(argv, message, capsys):
    captured = refused(argv, capsys)
    assert captured.err.splitlines()[-1] == f"python -m sb3_gpg: error: {message}"
    assert captured.out == "", "nothing is trained or printed before the check"


def test_num_threads_is_named_as_in_sb3_gpg_train(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    flat = re.sub(r"\s+", " ", capsys.readouterr().out)
    assert "--num-threads NUM_THREADS torch threads:" in flat and "(default: 1)" in flat.split("--num-threads", 2)[2]
    assert "--threads" not in flat.replace("--num-threads", "")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--env", "FrozenLake-v1", "--baseline", "linear"], "baseline='linear' fits the returns on the Box observations"),
        (["--env", "Blackjack-v1"], "a Tuple observation space (Tuple(Discrete(32), Discrete(11), Discrete(2)))"),
    ],
)
def test_what_the_env_cannot_serve_is_one_line_before_training(argv, message, capsys):
    captured = refused(argv, capsys)
    assert captured.err.startswith("python -m sb3_gpg: error: ") and message in captured.err
    assert captured.err.count("\n") == 1 and "Trained" not in captured.out


def test_a_save_path_that_cannot_be_written_is_refused_before_training(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    captured = refused(["--save", str(tmp_path / "file" / "model")], capsys)  # its folder would be a file
    assert captured.err == (
        f"python -m sb3_gpg: error: --save {tmp_path / 'file' / 'model'}: {tmp_path / 'file'} is not a folder this user "
        "can write to\n"
    )
    assert captured.out == "", "nothing is trained or printed before the check"


def test_help_prints_before_torch_sb3_and_gpg_are_imported():
    environment = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}  # Python's -X importtime
    command = [sys.executable, "-m", "sb3_gpg", "--help"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=environment)
    assert result.returncode == 0 and result.stdout.startswith("usage: python -m sb3_gpg ")
    imported = {line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}
    assert "sb3_gpg" in imported  # the package, whose __main__ runs
    heavy = {"torch", "numpy", "gymnasium", "stable_baselines3", "sb3_gpg.gpg", "sb3_gpg.estimator"} & imported
    assert not heavy, sorted(heavy)


def test_the_options_choices_are_those_of_the_modules_that_define_them():
    from sb3_gpg.common.env_util import VEC_ENVS
    from sb3_gpg.estimator.binning import BINNINGS
    from sb3_gpg.estimator.fitted_baselines import BASELINES
    from sb3_gpg.estimator.options import AUTO

    assert sb3_gpg.__main__.VEC_ENVS == VEC_ENVS and sb3_gpg.__main__.BINNINGS == BINNINGS
    assert sb3_gpg.__main__.BASELINES == BASELINES and sb3_gpg.__main__.AUTO == AUTO


def test_the_package_s_names_are_imported_on_first_use():
    from sb3_gpg.gpg import GPG

    assert sb3_gpg.GPG is GPG and set(sb3_gpg.__all__) <= set(dir(sb3_gpg))
    for name in sb3_gpg.__all__:
        assert getattr(sb3_gpg, name).__name__ == name
    with pytest.raises(AttributeError, match="module 'sb3_gpg' has no attribute 'NoSuchName'"):
        sb3_gpg.NoSuchName  # noqa: B018
