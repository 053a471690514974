"""
Where a setting carried over from PPO or from torch's defaults makes GPG slow: an MLP policy on the GPU (SB3's own
warning, in GPG's words and naming the policy the user chose), and torch's default threads for a small policy on the
CPU (a hint, once per process). Neither changes a setting: the user's device and torch's threads stay as given.
"""

import warnings

import torch as th
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from torch import nn


class SpeedHint(UserWarning):
    """A setting that makes GPG slower than it could run (a ``UserWarning``, so that it can be filtered)."""


# Whether this process has had the threads hint (it repeats for every model and learn call otherwise)
_threads_hinted = False


def policy_name(algorithm: OnPolicyAlgorithm) -> str:
    """
    :param algorithm: a model of a GPG class
    :return: the name the user chose its policy by (``"MlpPolicy"``), or its class's name for a custom policy
    """
    for alias, policy_class in algorithm.policy_aliases.items():
        if policy_class is algorithm.policy_class:
            return alias
    return algorithm.policy_class.__name__


def recommend_cpu(algorithm: OnPolicyAlgorithm) -> None:
    """
    SB3's ``_maybe_recommend_cpu`` for GPG: warn when an ``MlpPolicy`` is set up on the GPU.

    :param algorithm: a model of a GPG class, once its policy class and device are set
    """
    name, algo = policy_name(algorithm), type(algorithm).__name__
    if algorithm.device.type == "cpu" or name != "MlpPolicy":
        return
    warnings.warn(
        f"You are trying to run {algo} on the GPU ({algorithm.device}) with an {name}: for MLP policies {algo} on the "
        "GPU is usually slower than on the CPU (a rollout step's small batch costs more to move to the GPU and back "
        "than the GPU saves on it; a CnnPolicy is what a GPU speeds up). Pass device='cpu' (or export "
        "CUDA_VISIBLE_DEVICES=) to train on the CPU.",
        SpeedHint,
    )


def hint_threads(algorithm: OnPolicyAlgorithm) -> None:
    """
    Hint once per process, when ``learn`` starts on the CPU with a policy without convolutions and torch runs more
    than one thread, to call ``torch.set_num_threads(1)``.

    :param algorithm: the model whose ``learn`` starts
    """
    global _threads_hinted
    # Not conditioned on the number of cores: torch's default is one thread per core, and a small policy's per-step
    # batches gain nothing from intra-op threads on any machine, while on a busy one the threads wait for each other
    if _threads_hinted or algorithm.device.type != "cpu" or th.get_num_threads() == 1:
        return
    if any(isinstance(module, nn.Conv1d | nn.Conv2d | nn.Conv3d) for module in algorithm.policy.modules()):
        return  # convolutions over images do gain from threads
    _threads_hinted = True
    warnings.warn(
        f"torch runs {th.get_num_threads()} threads for {type(algorithm).__name__}'s {policy_name(algorithm)} on the "
        "CPU: a policy without convolutions usually trains faster on one thread, several times faster on a busy "
        "machine (its small per-step batches gain nothing from more threads, which contend for the cores). Call "
        "torch.set_num_threads(1) before training; this hint is shown once.",
        SpeedHint,
    )
