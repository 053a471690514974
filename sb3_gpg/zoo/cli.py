"""
What the ``sb3-gpg`` commands read before they import RL Zoo, torch or GPG's algorithms (seconds on a busy machine),
so that ``--help`` and a mistyped command answer at once: the commands, the train options sb3_gpg adds or changes,
``ZooError`` and its exit status, the ``argparse`` stand-in rl_zoo3's scripts run with (``zoo_argparse``), ``--algo``
in any case (``algo_in_any_case``), and ``sb3-gpg train --help`` built from rl_zoo3's source without importing it
(``train_help``). This module imports the standard library only.
"""

import argparse
import ast
import importlib.util
import sys
import types
from pathlib import Path
from typing import Any, NoReturn

COMMANDS = ("train", "enjoy", "record_video", "record_training", "plots")
# sb3_gpg.zoo.registry.GPG_ALGOS's names, and sb3_gpg.common.env_util.VEC_ENVS: copies, as those modules import torch
# and SB3 (tests/test_zoo.py checks that they agree)
GPG_ALGO_NAMES = ("gpg", "gpg_mask", "gpg_lstm", "gpg_mask_lstm")
VEC_ENVS = ("dummy", "subproc", "envpool")
# argparse's exit status for a mistake on the command line, which every sb3-gpg command and python -m sb3_gpg use
USAGE_ERROR = 2

# The train options sb3_gpg adds (any --algo); taken out of the arguments before rl_zoo3 parses them, and listed in
# its --help
OWN_TRAIN_OPTIONS: dict[str, dict[str, Any]] = {
    "--eval-seed": dict(
        type=int,
        default=None,
        help="seed of the evaluation envs (default: the training seed, as in RL Zoo, whose evaluation then starts from "
        "the first training episodes' initial states)",
    ),
    "--trial-score-window": dict(
        type=int,
        default=1,
        help="with -optimize, score each trial by the mean of its last N evaluations (default: 1, RL Zoo's: the last)",
    ),
}
# rl_zoo3's train options whose default, choices or help sb3_gpg changes
CHANGED_TRAIN_OPTIONS: dict[str, dict[str, Any]] = {
    "--num-threads": dict(
        default=1,
        help="torch threads (default: 1: a small MLP on a CPU trains fastest on one thread, and more only contend, "
        "above all on a busy machine; -1 or 0: torch's default, one per core, as RL Zoo's train)",
    ),
    "--n-timesteps": dict(
        help="training steps (default: -1, the hyperparameters file's n_timesteps)",
    ),
    "--vec-env": dict(
        choices=VEC_ENVS,
        help="how the training envs are stepped: dummy (in this process), subproc (one process per env) or envpool "
        "(EnvPool's C++ envs, pip install 'sb3-gpg[envpool]'); evaluation always uses Gymnasium's envs (default: dummy)",
    ),
}


class ZooError(Exception):
    """A mistake in the command line or the hyperparameter file, reported in one line."""


def usage_error(program: str, message: str) -> NoReturn:
    """
    End the process as argparse does on a bad option: the message on one line of stderr, exit status 2.

    :param program: the command's name, which the message starts with
    :param message: what is wrong, and what to pass instead
    """
    print(f"{program}: error: {message}", file=sys.stderr)
    sys.exit(USAGE_ERROR)


def zoo_argparse(
    program: str, changed: dict[str, dict[str, Any]] | None = None, added: dict[str, dict[str, Any]] | None = None
) -> types.SimpleNamespace:
    """
    The ``argparse`` module as an rl_zoo3 script sees it when its module's ``argparse`` is replaced by this: every
    parser is named ``program`` (the plot scripts pass their description where argparse takes the name, which
    becomes their description here), the named options get other keyword arguments (a default, choices, help), and
    sb3_gpg's own options are listed in ``--help``.

    :param program: the parsers' ``prog``
    :param changed: option string (e.g. ``--num-threads``) -> the ``add_argument`` keyword arguments to replace
    :param added: option string -> ``add_argument`` keyword arguments, for options sb3_gpg adds
    :return: a stand-in for the ``argparse`` module
    """
    changing, adding = changed or {}, added or {}

    class Parser(argparse.ArgumentParser):
        def __init__(self, description: str | None = None, *args: Any, **kwargs: Any):
            # ArgumentParser's first positional parameter is prog; rl_zoo3's plot scripts give it their description
            kwargs.setdefault("description", description)
            kwargs["prog"] = program
            super().__init__(*args, **kwargs)
            for option, option_kwargs in adding.items():
                self.add_argument(option, **option_kwargs)

        def add_argument(self, *names: Any, **kwargs: Any) -> argparse.Action:
            for name in names:
                kwargs.update(changing.get(name, {}))
            return super().add_argument(*names, **kwargs)

    return types.SimpleNamespace(**{**vars(argparse), "ArgumentParser": Parser})


def algo_in_any_case(argv: list[str], algos: list[str]) -> list[str]:
    """
    :param argv: a command's arguments
    :param algos: the ``--algo`` names rl_zoo3 knows
    :return: ``argv`` with an ``--algo`` value that names one algorithm in another case (``GPG``, ``PPO_LSTM``) spelt
        as rl_zoo3 knows it; a value that names none, or several, is left for rl_zoo3's parser to refuse
    """
    argv = list(argv)
    for index, argument in enumerate(argv):
        if argument == "--algo" and index + 1 < len(argv):
            argv[index + 1] = _known_spelling(argv[index + 1], algos)
        elif argument.startswith("--algo="):
            argv[index] = "--algo=" + _known_spelling(argument.removeprefix("--algo="), algos)
    return argv


def _known_spelling(algo: str, algos: list[str]) -> str:
    """
    :param algo: an ``--algo`` value as given
    :param algos: the names rl_zoo3 knows
    :return: the one known name that is ``algo`` in another case, else ``algo``
    """
    matches = [name for name in algos if name.casefold() == algo.casefold()]
    return matches[0] if algo not in algos and len(matches) == 1 else algo


class _StoreDictForHelp(argparse.Action):
    """rl_zoo3's ``StoreDict``, for the help alone: the same option, its values kept as given (not run as Python)."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)


def train_help(argv: list[str], program: str) -> None:
    """
    ``sb3-gpg train --help`` without importing rl_zoo3, which imports torch, SB3 and Optuna first: the statements of
    rl_zoo3's ``train()`` that build its parser, read from the installed ``rl_zoo3/train.py``, are run with the
    ``--algo`` names of ``rl_zoo3/utils.py``'s ``ALGOS`` and GPG's, and with sb3_gpg's options (as ``commands.train``
    runs rl_zoo3), then parse ``argv``, which prints the help and exits. Where rl_zoo3 is missing, or its source is not
    as expected, this returns and the command runs as usual (slower, and naming what is missing).

    :param argv: the train arguments, with ``-h`` or ``--help``
    :param program: the name the usage and error messages give
    """
    try:
        build = _train_parser_builder()
        algos = _zoo_algo_names()
        if build is None or algos is None:
            return
        namespace: dict[str, Any] = {
            "argparse": zoo_argparse(program, CHANGED_TRAIN_OPTIONS, added=OWN_TRAIN_OPTIONS),
            "ALGOS": dict.fromkeys([*algos, *GPG_ALGO_NAMES]),
            "StoreDict": _StoreDictForHelp,
        }
        exec(build, namespace)
        parser = namespace["train"]()
    except Exception:  # rl_zoo3 builds its parser otherwise: the usual path prints its help
        return
    if not isinstance(parser, argparse.ArgumentParser):
        return
    parser.parse_args(algo_in_any_case(argv, list(namespace["ALGOS"])))  # prints the help and exits


def _zoo_source(module: str) -> tuple[Path, ast.Module] | None:
    """
    :param module: a module of rl_zoo3 (``train``, ``utils``)
    :return: its file and syntax tree, without importing rl_zoo3; None where rl_zoo3 is not installed or not readable
    """
    try:
        spec = importlib.util.find_spec("rl_zoo3")
        if spec is None or not spec.submodule_search_locations:
            return None
        path = Path(next(iter(spec.submodule_search_locations)), f"{module}.py")
        return path, ast.parse(path.read_text(encoding="utf-8"))
    except (ImportError, ValueError, OSError, SyntaxError):  # ValueError: rl_zoo3 is None in sys.modules
        return None


def _zoo_algo_names() -> list[str] | None:
    """
    :return: the names of rl_zoo3's ``ALGOS`` dict, in its order, where ``rl_zoo3/utils.py`` sets it as a literal and
        changes it nowhere else at import; None otherwise
    """
    source = _zoo_source("utils")
    if source is None:
        return None
    statements = [
        statement
        for statement in source[1].body
        if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and any(isinstance(node, ast.Name) and node.id == "ALGOS" for node in ast.walk(statement))
    ]
    if len(statements) != 1 or not isinstance(statements[0], (ast.Assign, ast.AnnAssign)):
        return None
    value = statements[0].value
    if not isinstance(value, ast.Dict):
        return None
    names = [key.value if isinstance(key, ast.Constant) else None for key in value.keys]
    return [name for name in names if isinstance(name, str)] if all(isinstance(name, str) for name in names) else None


def _train_parser_builder() -> types.CodeType | None:
    """
    :return: code that defines ``train()``: rl_zoo3's train function cut before its ``parser.parse_args()``, returning
        the parser; None where anything before that call does more than build the parser
    """
    source = _zoo_source("train")
    if source is None:
        return None
    path, tree = source
    function = next((node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "train"), None)
    if function is None or function.args.args or function.decorator_list:
        return None
    body: list[ast.stmt] = []
    for statement in function.body:
        if _calls(statement, "parser", "parse_args"):
            break
        builds = (
            isinstance(statement, ast.Assign)
            and [_name(target) for target in statement.targets] == ["parser"]
            and _calls(ast.Expr(statement.value), "argparse", "ArgumentParser")
        ) or _calls(statement, "parser", "add_argument")
        if not builds:
            return None
        body.append(statement)
    else:
        return None
    function.body = [*body, ast.Return(value=ast.Name(id="parser", ctx=ast.Load()))]
    module = ast.fix_missing_locations(ast.Module(body=[function], type_ignores=[]))
    return compile(module, str(path), "exec")


def _calls(statement: ast.stmt, owner: str, method: str) -> bool:
    """
    :param statement: a statement of rl_zoo3's source
    :param owner: a variable or module name
    :param method: the name of its method or attribute called
    :return: whether the statement is ``owner.method(...)``, or a variable set to it
    """
    value = statement.value if isinstance(statement, (ast.Expr, ast.Assign)) else None
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == method
        and _name(value.func.value) == owner
    )


def _name(node: ast.AST) -> str | None:
    """:return: the variable's name where the node is one"""
    return node.id if isinstance(node, ast.Name) else None
