"""
RL Zoo integration: registers GPG, MaskableGPG and RecurrentGPG in rl_zoo3, then runs rl_zoo3's own scripts.

RL Zoo has no plugin mechanism: its ``ALGOS``, ``HYPERPARAMS_SAMPLER`` and ``HYPERPARAMS_CONVERTER`` are plain dicts,
``--algo`` choices are read from ``ALGOS`` when the parser is built, and the default config is rl_zoo3's own
``hyperparams/<algo>.yml``. So, as RL Zoo's maintainers advise for new algorithms (see its SBX guide), this package
adds ``gpg``, ``gpg_mask``, ``gpg_lstm`` and ``gpg_mask_lstm`` to those dicts (``registry``), trains through a subclass
of rl_zoo3's ``ExperimentManager`` that defaults to the YAML shipped with sb3_gpg and checks the GPG-specific input so
that mistakes give one-line errors (``experiment``), and otherwise hands over to rl_zoo3's scripts (``commands``).
What it adds to rl_zoo3 for every algorithm (an evaluation seed, windowed trial scores, Optuna's tables created before
the workers, PNG plots) is in ``extensions``. Every other algorithm keeps working through the same entry points.

Only ``cli`` (the standard library alone) is imported here, so that ``sb3-gpg --help`` and ``sb3-gpg train --help``
answer at once: ``registry``'s names are imported on first use, and the other modules import rl_zoo3, which the
``zoo`` extra installs, and ``run`` names that extra where it is missing.
"""

import difflib
import sys
from typing import TYPE_CHECKING, Any

from sb3_gpg.zoo.cli import COMMANDS, ZooError, algo_in_any_case, train_help, usage_error

if TYPE_CHECKING:
    from sb3_gpg.zoo.registry import (
        GPG_ALGOS,
        GPG_HYPERPARAMS,
        check_gpg_hyperparams,
        convert_gpg_params,
        register_gpg,
        sample_gpg_params,
        sample_gpg_rollout,
        searched_baselines,
        searched_binnings,
    )

# The modules the zoo extra installs (setup.cfg), by import name: a command that misses one names the extra
ZOO_EXTRA_MODULES = {"rl_zoo3", "optuna", "yaml", "requests", "seaborn", "scipy", "pandas", "matplotlib", "moviepy", "pygame"}
# registry's names, imported with it (torch and GPG's algorithms) on first use
REGISTRY_NAMES = (
    "GPG_ALGOS",
    "GPG_HYPERPARAMS",
    "check_gpg_hyperparams",
    "convert_gpg_params",
    "register_gpg",
    "sample_gpg_params",
    "sample_gpg_rollout",
    "searched_baselines",
    "searched_binnings",
)

__all__ = [
    "COMMANDS",
    "GPG_ALGOS",
    "GPG_HYPERPARAMS",
    "ZooError",
    "check_gpg_hyperparams",
    "convert_gpg_params",
    "main",
    "register_gpg",
    "run",
    "sample_gpg_params",
    "sample_gpg_rollout",
    "searched_baselines",
    "searched_binnings",
]


def __getattr__(name: str) -> Any:
    if name in REGISTRY_NAMES:
        from sb3_gpg.zoo import registry

        return getattr(registry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run(command: str, argv: list[str] | None = None, program: str | None = None) -> None:
    """
    Run one RL Zoo command with GPG registered and ``--algo`` taken in any case; a ``ZooError`` ends the process with
    a one-line message and argparse's exit status (2), as a bad option does, and a module of the zoo extra that is
    missing with a one-line message naming the extra (exit status 1). ``train --help`` prints without importing
    rl_zoo3 (see ``cli.train_help``).

    :param command: one of ``COMMANDS``
    :param argv: its arguments (``sys.argv[1:]`` when None)
    :param program: the name its usage and error messages give (``sb3-gpg <command>`` when None)
    """
    program = program or f"sb3-gpg {command}"
    argv = sys.argv[1:] if argv is None else argv
    if command == "train" and {"-h", "--help"} & set(argv):
        train_help(argv, program)  # exits, unless rl_zoo3 is missing or builds its parser otherwise
    try:
        from sb3_gpg.zoo import commands
        from sb3_gpg.zoo.registry import register_gpg

        register_gpg()
        from rl_zoo3.utils import ALGOS

        getattr(commands, command)(algo_in_any_case(argv, list(ALGOS)), program)
    except ZooError as error:
        usage_error(program, str(error))
    except ModuleNotFoundError as error:
        missing = (error.name or "").partition(".")[0]
        if missing not in ZOO_EXTRA_MODULES:
            raise
        sys.exit(f"{program}: error: {program} needs RL Zoo (no module named {missing!r}): pip install 'sb3-gpg[zoo]'")


def main(argv: list[str] | None = None) -> None:
    """
    The ``sb3-gpg`` console script: ``sb3-gpg {train,enjoy,record_video,record_training,plots} ...``; a missing or
    unknown command exits with argparse's status (2).

    :param argv: the command and its arguments (``sys.argv[1:]`` when None)
    """
    argv = sys.argv[1:] if argv is None else argv
    usage = f"usage: sb3-gpg {{{','.join(COMMANDS)}}} [rl_zoo3 arguments]; e.g. sb3-gpg train --algo gpg --env CartPole-v1"
    if argv and argv[0] in ("-h", "--help"):
        print(f"{usage}\nEach command takes rl_zoo3's arguments and lists them with --help, e.g. sb3-gpg train --help")
        return
    if not argv:
        print(usage, file=sys.stderr)
        usage_error("sb3-gpg", f"give a command: {', '.join(COMMANDS)}")
    if argv[0] not in COMMANDS:
        close = difflib.get_close_matches(argv[0], COMMANDS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        print(usage, file=sys.stderr)
        usage_error("sb3-gpg", f"{argv[0]!r} is not a command{hint}; choose from {', '.join(COMMANDS)}")
    run(argv[0], argv[1:])
