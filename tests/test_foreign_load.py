"""
A GPG file loaded by another algorithm's ``load`` (``PPO.load``, ``A2C.load``, ``MaskablePPO.load``) is refused at
load with one line naming the ``load`` to use, where before it loaded and then failed in GPG's estimator at the first
rollout, or trained a critic the policy does not have. sb3-contrib's ``RecurrentPPO.load`` builds a buffer of its
own and is not refused (the docs say so).
"""

import io

import pytest
from sb3_contrib import MaskablePPO
from stable_baselines3 import A2C, PPO

from sb3_gpg import GPG
from tests.helpers import ALGORITHMS, Algorithm


class SubclassedGPG(GPG):
    """A user's subclass: its files name it by its module."""


# Each GPG class (by its entry of ALGORITHMS) and another algorithm's load that builds the model's rollout buffer
LOADS = [(0, PPO), (0, A2C), (1, MaskablePPO), (2, PPO), (3, PPO)]


def saved(algorithm: Algorithm, tmp_path, cls: type | None = None):
    """:return: the path of a file saved by a fresh model of ``cls`` (the algorithm's class) on the tests' T-mazes"""
    (cls or algorithm.cls)(algorithm.policy(), algorithm.env(), **algorithm.small).save(tmp_path / "model")
    return tmp_path / "model.zip"


@pytest.mark.parametrize(
    "index, loader", LOADS, ids=[f"{ALGORITHMS[index].name}-{loader.__name__}" for index, loader in LOADS]
)
def test_another_algorithms_load_of_a_gpg_file_names_the_load_to_use(index, loader, tmp_path):
    algorithm = ALGORITHMS[index]
    path = saved(algorithm, tmp_path)
    with pytest.raises(
        ValueError, match=rf"^This file was saved by {algorithm.name}: load it with sb3_gpg\.{algorithm.name}\.load\."
    ):
        loader.load(path, device="cpu")
    # Its own class loads it, and trains
    algorithm.cls.load(path, env=algorithm.env(), device="cpu").learn(32)


def test_a_subclass_is_named_by_its_module(tmp_path):
    path = saved(ALGORITHMS[0], tmp_path, SubclassedGPG)
    with pytest.raises(ValueError, match=rf"load it with {__name__}\.SubclassedGPG\.load\."):
        PPO.load(path, device="cpu")


def test_save_leaves_the_model_as_it_was(tmp_path):
    algorithm = ALGORITHMS[0]
    model = GPG("MlpPolicy", algorithm.env(), **algorithm.small)
    kwargs = model.rollout_buffer_kwargs
    model.save(io.BytesIO())
    assert model.rollout_buffer_kwargs is kwargs and kwargs["group_options"] == model.group_options
