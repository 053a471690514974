"""
The hints where a setting makes GPG slow: SB3's warning of an MLP policy on the GPU, in GPG's words and naming the
policy the user chose (checked without a GPU: the model's device is set after it is built), and the one-time hint to
run torch on one thread, which never changes torch's threads itself.
"""

import warnings

import pytest
import torch as th
from torch import nn

from sb3_gpg import GPG, MaskableGPG
from sb3_gpg.common.swap_guards import speed_hints
from sb3_gpg.common.swap_guards.speed_hints import SpeedHint, hint_threads
from sb3_gpg.gpg.policies import CnnPolicy
from tests.helpers import SMALL


def cpu_model(cls=GPG) -> GPG:
    return cls("MlpPolicy", "CartPole-v1", device="cpu", **SMALL)


@pytest.mark.parametrize("cls", [GPG, MaskableGPG])
def test_the_gpu_warning_names_the_policy_the_user_chose(cls):
    model = cpu_model(cls)
    model.device = th.device("cuda")  # as SB3's device="auto" sets it on a machine with a GPU
    with pytest.warns(
        SpeedHint, match=rf"run {cls.__name__} on the GPU \(cuda\) with an MlpPolicy: .* slower than on the CPU"
    ) as record:
        model._maybe_recommend_cpu()
    (warning,) = record
    assert "device='cpu'" in str(warning.message) and "ActorOnlyPolicy" not in str(warning.message)
    # SB3's wording starts the same, so that filters written for SB3's warning still match
    assert str(warning.message).startswith(f"You are trying to run {cls.__name__} on the GPU")


def test_no_gpu_warning_on_the_cpu_or_for_a_cnn():
    model = cpu_model()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model._maybe_recommend_cpu()
        model.device, model.policy_class = th.device("cuda"), CnnPolicy
        model._maybe_recommend_cpu()


@pytest.fixture
def threads(monkeypatch):
    """:return: ``torch.set_num_threads``, with torch's threads and the hint's once-per-process state restored after"""
    monkeypatch.setattr(speed_hints, "_threads_hinted", False)
    before = th.get_num_threads()
    yield th.set_num_threads
    th.set_num_threads(before)


def test_the_threads_hint_comes_once_and_leaves_the_threads_as_they_are(threads):
    threads(2)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        model = cpu_model().learn(64)
        model.learn(64)
        cpu_model().learn(64)
    hints = [warning for warning in record if issubclass(warning.category, SpeedHint)]
    assert len(hints) == 1 and "torch.set_num_threads(1)" in str(hints[0].message)
    assert th.get_num_threads() == 2


def test_no_threads_hint_on_one_thread_or_for_convolutions(threads):
    threads(1)
    model = cpu_model()
    with warnings.catch_warnings():
        # the hint alone: other warnings (a package's, the first time the worker imports it) are not this test's
        warnings.simplefilter("error", SpeedHint)
        model.learn(64)
        threads(2)
        model.policy.add_module("conv", nn.Conv2d(1, 1, 1))  # as a CnnPolicy's features extractor holds them
        hint_threads(model)
    assert not speed_hints._threads_hinted
