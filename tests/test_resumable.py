"""A training paused and resumed (sb3_gpg_bench.resumable) is the training that never paused."""

import argparse
import csv
import datetime
import random
import runpy
from pathlib import Path

import numpy as np
import pytest
import torch as th
import yaml
from stable_baselines3.common.save_util import load_from_zip_file

from sb3_gpg_bench.resumable import EXIT_PAUSED, main

BUDGET = 768


def _train(tmp_path, name, algo, env_id, *pauses, lost=None):
    """
    Train, pausing at each step of ``pauses`` and resuming with the generators and torch's threads the process then
    holds scrambled.

    :param lost: the pause whose state is lost (the part after it ended without saving one), so that the next part goes
        on from the pause before
    :return: the run's evaluations and trained parameters, and its training episodes' returns and lengths (its Monitor
        files)
    """
    conf = tmp_path / f"{name}.yml"
    entry = {"policy": "MlpPolicy", "normalize": True, "n_envs": 2, "n_steps": 64, "batch_size": 64, "n_epochs": 2,
             "n_timesteps": BUDGET, "policy_kwargs": "dict(net_arch=[16])"}  # fmt: skip
    conf.write_text(yaml.safe_dump({env_id: entry}))
    folder = tmp_path / name
    argv = ["--algo", algo, "--env", env_id, "--seed", "3", "--eval-freq", "96", "--eval-episodes", "2",
            "--num-threads", "1", "-f", str(folder), "--conf-file", str(conf)]  # fmt: skip
    path = tmp_path / f"{name}.pkl"
    for step in pauses:
        before = path.read_bytes() if path.exists() else None
        with pytest.raises(SystemExit) as paused:
            main(["--state", str(path), "--pause-at-step", str(step), "--", *argv])
        assert paused.value.code == EXIT_PAUSED
        if step == lost:
            path.write_bytes(before)
        th.manual_seed(12345), np.random.seed(12345), random.seed(12345), th.set_num_threads(2)
    main(["--state", str(path), "--", *argv])
    assert th.get_num_threads() == 1
    (run,) = (folder / algo).iterdir()
    evaluations = dict(np.load(run / "evaluations.npz"))
    # the trained model, where train saves it
    parameters = load_from_zip_file(run / f"{env_id}.zip")[1]["policy"]
    evaluations |= {f"parameters: {name}": value.numpy() for name, value in parameters.items()}
    episodes = []
    for monitor in sorted(run.glob("*.monitor.csv")):
        with open(monitor) as file:
            next(file)  # the header line
            episodes.append([(row["r"], row["l"]) for row in csv.DictReader(file)])
    return evaluations, episodes


@pytest.mark.parametrize(("algo", "env_id"), [("ppo", "Pendulum-v1"), ("gpg", "InvertedPendulum-v5")])
def test_a_paused_training_resumed_is_the_training_that_never_paused(tmp_path, algo, env_id):
    evaluations, episodes = _train(tmp_path, "through", algo, env_id)
    assert len(evaluations["timesteps"]) == BUDGET // 96 and any(name.startswith("parameters") for name in evaluations)
    assert sum(map(len, episodes)) > 0
    # paused before its first rollout, then between two updates, then between two updates that an evaluation splits
    resumed_evaluations, resumed_episodes = _train(tmp_path, "paused", algo, env_id, 0, 300, 400)
    # and a part that ran past an evaluation and ended without saving its state, so that the next goes on from 384
    lost_evaluations, lost_episodes = _train(tmp_path, "lost", algo, env_id, 300, 400, lost=400)
    for other in (resumed_evaluations, lost_evaluations):
        assert {name: value.tolist() for name, value in other.items()} == {
            name: value.tolist() for name, value in evaluations.items()
        }
    assert resumed_episodes == episodes == lost_episodes


def test_a_resume_with_other_arguments_is_refused(tmp_path):
    conf = tmp_path / "ppo.yml"
    entry = {"policy": "MlpPolicy", "n_steps": 32, "batch_size": 32, "n_epochs": 1, "n_timesteps": 128}
    conf.write_text(yaml.safe_dump({"CartPole-v1": entry}))
    argv = ["--algo", "ppo", "--env", "CartPole-v1", "-n", "128", "--seed", "1", "--num-threads", "1", "-f",
            str(tmp_path / "logs"), "--conf-file", str(conf)]  # fmt: skip
    state = ["--state", str(tmp_path / "state.pkl")]
    with pytest.raises(SystemExit):
        main([*state, "--pause-at-step", "64", "--", *argv])
    with pytest.raises(ValueError, match=r"other arguments.*--seed', '2'"):
        main([*state, "--", *[arg if arg != "1" else "2" for arg in argv]])
    conf.write_text(yaml.safe_dump({"CartPole-v1": {**entry, "n_epochs": 2}}))
    with pytest.raises(ValueError, match=f"other arguments, files or code.*'files': .*'{conf}'"):
        main([*state, "--", *argv])


def test_zoo_suite_pauses_at_the_next_such_time():
    pause_time = runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "zoo_suite.py"))["pause_time"]
    now = datetime.datetime.now()
    for minutes in (1, -1):
        at = pause_time((now + datetime.timedelta(minutes=minutes)).strftime("%H:%M"))
        assert 0 < at - now.timestamp() <= 24 * 3600
    assert pause_time("2030-01-02T03:04") == datetime.datetime(2030, 1, 2, 3, 4).timestamp()
    with pytest.raises(argparse.ArgumentTypeError, match="HH:MM"):
        pause_time("5pm")
