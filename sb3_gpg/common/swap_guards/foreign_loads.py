"""
Another algorithm's ``load`` of a GPG file. ``PPO.load`` (or ``A2C.load``, ``MaskablePPO.load``) would rebuild the model
from the file without complaint, since the policy and its weights load as they are; the model then fails in GPG's
estimator at its first rollout, or trains a critic that the policy does not have. SB3's ``load`` lets no class check
the file before it builds the model, and it builds the rollout buffer from the file's ``rollout_buffer_kwargs``: a GPG
file holds a ``SavedGroupOptions`` there in place of the buffer's group options, which the GPG classes' own
``_setup_model`` replaces with the model's options, and which the buffer refuses from any other algorithm's.
sb3-contrib's ``RecurrentPPO`` builds a buffer of its own, so its ``load`` is not refused this way.
"""

import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class SavedGroupOptions:
    """
    What a GPG file holds in place of the rollout buffer's ``group_options``: the class that saved it.

    :param algorithm: that class, as its users import it (``sb3_gpg.GPG``)
    """

    algorithm: str

    def error(self) -> ValueError:
        """
        :return: the error of a load by another algorithm, naming the ``load`` to use
        """
        name = self.algorithm.rsplit(".", 1)[-1]
        return ValueError(
            f"This file was saved by {name}: load it with {self.algorithm}.load. Another algorithm's load (e.g. "
            f"stable_baselines3.PPO.load) cannot train {name}'s policy, which has no critic."
        )


def saved_group_options(algorithm_class: type) -> SavedGroupOptions:
    """
    :param algorithm_class: the GPG class saving a model
    :return: the marker its file holds in place of the group options, naming the class as ``sb3_gpg`` exports it (a
        user's subclass by its module)
    """
    package = sys.modules["sb3_gpg"]  # imported: every GPG class is in it
    name = algorithm_class.__name__
    if name in package.__all__ and getattr(package, name) is algorithm_class:
        return SavedGroupOptions(f"sb3_gpg.{name}")
    return SavedGroupOptions(f"{algorithm_class.__module__}.{algorithm_class.__qualname__}")
