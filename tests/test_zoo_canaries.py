"""
What rl_zoo3 does that sb3_gpg.zoo works around: when one of these fails, rl_zoo3 changed and the workaround named in
its comment may be dropped or needs another way.
"""

import argparse
import inspect
import sys

import pytest
from rl_zoo3 import enjoy as zoo_enjoy
from rl_zoo3 import record_training as zoo_record_training
from rl_zoo3 import train as zoo_train
from rl_zoo3.exp_manager import ExperimentManager
from stable_baselines3.common.callbacks import EvalCallback

from sb3_gpg.zoo import GPG_HYPERPARAMS, register_gpg
from sb3_gpg.zoo.experiment import ZooExperimentManager
from sb3_gpg.zoo.extensions import replaced


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
