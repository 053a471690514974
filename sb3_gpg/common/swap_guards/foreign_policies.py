"""
Policies of other algorithms: a PPO user passes an actor-critic policy to GPG, or loads a PPO file with ``GPG.load``,
and SB3 would fail deep in the policy's constructor. The policy class says which algorithm it belongs to.
"""

import io
import pathlib
from typing import Any

from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from sb3_contrib.common.recurrent.policies import RecurrentActorCriticPolicy
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.save_util import load_from_zip_file

from sb3_gpg.common.maskable.policies import MaskableActorOnlyPolicy
from sb3_gpg.common.maskable_recurrent.policies import MaskableRecurrentActorOnlyPolicy
from sb3_gpg.common.policies import ActorOnlyMixin
from sb3_gpg.common.recurrent.policies import RecurrentActorOnlyPolicy

# Policy base -> the algorithm that saves it; the first match wins, so subclasses come before their bases
SAVED_BY: tuple[tuple[type, str], ...] = (
    (MaskableRecurrentActorOnlyPolicy, "MaskableRecurrentGPG"),
    (MaskableActorOnlyPolicy, "MaskableGPG"),
    (RecurrentActorOnlyPolicy, "RecurrentGPG"),
    (ActorOnlyMixin, "GPG"),
    (MaskableActorCriticPolicy, "MaskablePPO"),
    (RecurrentActorCriticPolicy, "RecurrentPPO"),
    (ActorCriticPolicy, "PPO or A2C"),
)


def saved_by(policy_class: Any) -> str:
    """
    :param policy_class: the policy class stored in a saved model
    :return: the algorithm that saves models with that policy
    """
    if isinstance(policy_class, type):
        for base, algorithm in SAVED_BY:
            if issubclass(policy_class, base):
                return algorithm
    return "another algorithm"


def check_saved_policy(
    path: str | pathlib.Path | io.BufferedIOBase, algorithm: str, policy_base: type, custom_objects: dict[str, Any] | None
) -> None:
    """
    :param path: the saved model, as ``BaseAlgorithm.load`` takes it (a file object is read and rewound)
    :param algorithm: the name of the class loading it
    :param policy_base: the policy class that algorithm needs
    :param custom_objects: ``load``'s replacements for objects that cannot be deserialised
    :raises ValueError: naming the algorithm that saved the file and what to do, when its policy is not a ``policy_base``
    """
    position = path.tell() if isinstance(path, io.BufferedIOBase) else None
    data, _, _ = load_from_zip_file(path, load_data=True, custom_objects=custom_objects, device="cpu", print_system_info=False)
    if isinstance(path, io.BufferedIOBase) and position is not None:  # both or neither
        path.seek(position)
    policy_class = (data or {}).get("policy_class")
    if isinstance(policy_class, type) and issubclass(policy_class, policy_base):
        return
    policy = f"{policy_class.__module__}.{policy_class.__qualname__}" if isinstance(policy_class, type) else repr(policy_class)
    writer = saved_by(policy_class)
    if isinstance(policy_class, type) and issubclass(policy_class, ActorOnlyMixin):
        raise ValueError(
            f"{path} holds a model saved by {writer} (policy {policy}), not by {algorithm}: load it with "
            f"sb3_gpg.{writer}.load."
        )
    raise ValueError(
        f"{path} holds a model saved by {writer} (policy {policy}), not by {algorithm}: load it with the class that "
        f"saved it (e.g. stable_baselines3.PPO.load), or train a {algorithm} with the same hyperparameters "
        f"({algorithm}('MlpPolicy', env, ...) accepts PPO's arguments). A {algorithm} policy has no critic, so PPO's "
        "weights cannot be loaded into it."
    )


def check_policy_class(algorithm: str, policy_class: type, policy_base: type, aliases: list[str]) -> None:
    """
    :param algorithm: the name of the algorithm given the policy
    :param policy_class: the policy class it was given
    :param policy_base: the policy class that algorithm needs
    :param aliases: the names of the algorithm's policies (its ``policy_aliases``)
    :raises ValueError: naming the policies to use, when ``policy_class`` is not a ``policy_base``
    """
    if not issubclass(policy_class, policy_base):
        raise ValueError(
            f"{algorithm} needs an actor-only policy ({policy_base.__module__}.{policy_base.__name__}), got "
            f"{policy_class.__name__}: use {' or '.join(repr(alias) for alias in aliases)}, or subclass "
            f"{policy_base.__name__} for a custom network."
        )


# The policies of the algorithms that read action masks
MASKABLE_POLICIES = (MaskableActorOnlyPolicy, MaskableRecurrentActorOnlyPolicy)
# The policy names of the algorithms without an LSTM and of those with one, in the same order
POLICY_NAMES = ("MlpPolicy", "CnnPolicy", "MultiInputPolicy")
LSTM_POLICY_NAMES = ("MlpLstmPolicy", "CnnLstmPolicy", "MultiInputLstmPolicy")


def unknown_policy_name(algorithm_class: Any, policy_name: str) -> ValueError:
    """
    SB3 answers a policy name an algorithm does not have with "Policy ... unknown"; a recurrent policy's name on GPG
    (or the reverse) is a mistake of class, and the error names the class.

    :param algorithm_class: the GPG class given the name (its ``policy_aliases`` and ``policy_base`` are read)
    :param policy_name: the policy name it was given
    :return: the error to raise, one line naming the class (or the policies) to use
    """
    algorithm, aliases = algorithm_class.__name__, list(algorithm_class.policy_aliases)
    maskable = issubclass(algorithm_class.policy_base, MASKABLE_POLICIES)
    takes = f"{algorithm} takes {', '.join(aliases)}"
    if policy_name in LSTM_POLICY_NAMES and policy_name not in aliases:
        right, other = (
            ("MaskableRecurrentGPG", "RecurrentGPG without") if maskable else ("RecurrentGPG", "MaskableRecurrentGPG with")
        )
        return ValueError(f"{policy_name} is {right}'s policy: use {right} ({other} action masks); {takes}.")
    if policy_name in POLICY_NAMES and policy_name not in aliases:
        right, other = ("MaskableGPG", "GPG without") if maskable else ("GPG", "MaskableGPG with")
        lstm = LSTM_POLICY_NAMES[POLICY_NAMES.index(policy_name)]
        return ValueError(f"{policy_name} is {right}'s policy: use {right} ({other} action masks), or {algorithm}'s {lstm}.")
    return ValueError(f"Policy {policy_name} unknown: {takes}, or a policy class.")
