"""
Another algorithm's ``load`` of a GPG file. ``PPO.load`` (or ``A2C.load``, ``MaskablePPO.load``) would rebuild the model
from the file without complaint, since the policy and its weights load as they are; the model then fails in GPG's
estimator at its first rollout, or trains a critic that the policy does not have. SB3's ``load`` lets no class check
the file before it builds the model, and it builds the rollout buffer from the file's ``rollout_buffer_kwargs``: a GPG
file holds there, in place of the buffer's group options, the name of the class that saved it (a plain string, so that
any version of sb3_gpg reads the file), which the GPG classes' own ``_setup_model`` replaces with the model's options,
and which the buffer refuses from any other algorithm's. sb3-contrib's ``RecurrentPPO`` builds a buffer of its own, so
its ``load`` is not refused this way.
"""

import sys


def saved_group_options(algorithm_class: type) -> str:
    """
    :param algorithm_class: the GPG class saving a model
    :return: what its file holds in place of the group options: the class as ``sb3_gpg`` exports it (a user's
        subclass by its module)
    """
    package = sys.modules["sb3_gpg"]  # imported: every GPG class is in it
    name = algorithm_class.__name__
    if name in package.__all__ and getattr(package, name) is algorithm_class:
        return f"sb3_gpg.{name}"
    return f"{algorithm_class.__module__}.{algorithm_class.__qualname__}"


def foreign_load_error(saved_by: str) -> ValueError:
    """
    :param saved_by: the class a file names in place of the group options (``saved_group_options``)
    :return: the error of its load by another algorithm, naming the ``load`` to use
    """
    name = saved_by.rsplit(".", 1)[-1]
    return ValueError(
        f"This file was saved by {name}: load it with {saved_by}.load. Another algorithm's load (e.g. "
        f"stable_baselines3.PPO.load) cannot train {name}'s policy, which has no critic."
    )
