"""
The tests' fixtures: ``group_case`` (an entry of ``CASES``: random rollouts, the group options and the reference) and
``algorithm`` (each of the four algorithms, for the tests by feature). The helpers they use are in tests/helpers.py.

A test that takes ``group_case`` runs once per entry of ``CASES``, or of a slice of it marked with
``@pytest.mark.cases(start, stop, step)`` (the masked and recurrent buffers run a third each: their own code is in how
samples leave the buffer, not in the estimator, which ``test_estimator`` checks on all cases).

Every test starts from the same global random state (``same_global_random_state``).

``device`` is the torch device of ``--device`` (default "cpu"; "cuda" on a machine with a GPU): the tests that take it
build their models there, so ``pytest --device cuda`` runs them on the GPU. The tests that pin ``device="cpu"`` stay on
the CPU (learning thresholds, digests and comparisons made with the CPU's arithmetic), and the rest take SB3's
``device="auto"``: the GPU wherever one is visible.
"""

import importlib.util
import itertools
import random
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch as th

from tests.helpers import ALGORITHMS, CASES, Algorithm, GroupCase, case_id

# The tests' MLPs on CPU, as the main job and the scripts: one torch thread is fastest, more only contend for the
# cores (many times slower on a busy machine)
th.set_num_threads(1)


@pytest.fixture(autouse=True)
def same_global_random_state():
    """
    Every test starts from the same global random state, whichever tests ran before it in its worker: what a test
    draws from NumPy's, torch's or Python's global generators (a group buffer's Fourier seed where none is given, say)
    does not depend on the order in which pytest-xdist deals the tests.
    """
    random.seed(0)
    np.random.seed(0)
    th.manual_seed(0)


# The modules of the RL Zoo integration's and the experiment harness's tests (sb3_gpg_bench), which import RL Zoo, Optuna
# and SciPy: without them (a quick check of the core install, the [check] extra) these modules are not collected
ZOO_MODULES = {"test_zoo.py", "test_zoo_canaries.py", "test_zoo_optuna.py", "test_critic_diagnosis.py", "test_dynamics.py",
               "test_scripts.py", "test_suite_curves.py", "test_suite_report.py"}  # fmt: skip
ZOO_PACKAGES = ("rl_zoo3", "optuna", "scipy")
MISSING = [name for name in ZOO_PACKAGES if importlib.util.find_spec(name) is None]
assert all((Path(__file__).parent / name).exists() for name in ZOO_MODULES), "ZOO_MODULES names a module that is gone"


def pytest_ignore_collect(collection_path: Path, config) -> bool | None:
    return True if MISSING and collection_path.name in ZOO_MODULES else None


def pytest_report_header(config) -> str | None:
    if MISSING:
        return f"not installed: {', '.join(MISSING)}: the RL Zoo and harness tests are left out ({len(ZOO_MODULES)} modules)"
    return None


# The optional extras' packages that are not installed (a check of the core install): a test that needs one skips and
# names it, rather than failing. Only those: where a package is installed, a failure to import it is a failure
EXTRAS_PACKAGES = ("envpool", "rl_zoo3", "optuna", "mujoco", "Box2D", "pygame", "moviepy", "tensorboard", "rliable", "ray",
                   "scipy", "pandas", "seaborn", "matplotlib")  # fmt: skip
ABSENT = {name for name in EXTRAS_PACKAGES if importlib.util.find_spec(name) is None}
# what gymnasium's environments raise DependencyNotInstalled for
ENV_PACKAGES = {"mujoco", "Box2D", "pygame", "moviepy"}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """
    The tests that train for real (``slow``) build torch's distributions without checking their arguments: torch checks
    them at each distribution built and each sample scored, a fifth of a masked policy's training here, and changes no
    value; the other tests, which run every code path, keep the checks on, as a user's training does.
    """
    if item.get_closest_marker("slow") is None:
        return (yield)
    checks = th.distributions.Distribution._validate_args
    th.distributions.Distribution.set_default_validate_args(False)
    try:
        return (yield)
    finally:
        th.distributions.Distribution.set_default_validate_args(checks)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    try:
        return (yield)
    except Exception as error:
        cause: BaseException | None = error
        while cause is not None:  # the docs' examples re-raise what failed as the cause of their AssertionError
            if isinstance(cause, gym.error.DependencyNotInstalled) and ABSENT & ENV_PACKAGES:
                pytest.skip(f"an environment's extra is not installed: {cause}")
            if isinstance(cause, ModuleNotFoundError) and cause.name in ABSENT:
                pytest.skip(f"{cause.name} is not installed (an optional extra)")
            cause = cause.__cause__
        raise


def pytest_addoption(parser):
    parser.addoption(
        "--device",
        default="cpu",
        help='torch device of the models of the tests that take the "device" fixture: cpu (default), or cuda (cuda:N)',
    )


@pytest.hookimpl(trylast=True)  # after -m and -k have deselected
def pytest_collection_modifyitems(config, items):
    """
    Under -n (pyproject's ``--dist worksteal``) each worker is dealt a contiguous share of the tests, runs it from its
    head, and an idle worker steals from the tail of another's: each share is made to start with its part of the tests
    that train for real (``slow``), so that the run ends on short tests and the workers finish together. A module's
    slow tests stay in one share (a module-scoped fixture is built once).
    """
    workers = getattr(config, "workerinput", {}).get("workercount", 1)
    slow = [item for item in items if item.get_closest_marker("slow")]
    if workers < 2 or not slow:
        return
    modules: dict[str, list] = {}
    for item in slow:
        modules.setdefault(item.nodeid.split("::")[0], []).append(item)
    shares: list[list] = [[] for _ in range(workers)]
    for tests in sorted(modules.values(), key=len, reverse=True):
        min(shares, key=len).extend(tests)
    fast = iter([item for item in items if not item.get_closest_marker("slow")])
    remaining, ordered = len(items), []
    for index, share in enumerate(shares):  # the shares' sizes as worksteal deals them
        size = remaining // (workers - index)
        remaining -= size
        ordered += share + list(itertools.islice(fast, max(size - len(share), 0)))
    items[:] = ordered + list(fast)


def pytest_configure(config):
    config.addinivalue_line("markers", "cases(start, stop, step): run a test that takes group_case on a slice of CASES")
    device = config.getoption("device")
    if device != "cpu" and not device.startswith("cuda"):
        raise pytest.UsageError(f"--device {device}: use cpu or cuda (cuda:N for another GPU)")
    if device.startswith("cuda") and not th.cuda.is_available():
        raise pytest.UsageError(f"--device {device}: torch sees no CUDA device here (torch.cuda.is_available() is False)")


def pytest_generate_tests(metafunc):
    if "group_case" in metafunc.fixturenames:
        marker = metafunc.definition.get_closest_marker("cases")
        indices = range(len(CASES))[slice(*marker.args) if marker else slice(None)]
        metafunc.parametrize("group_case", indices, ids=[case_id(CASES[index]) for index in indices], indirect=True)


@pytest.fixture
def group_case(request) -> GroupCase:
    return GroupCase(request.param)


@pytest.fixture(params=ALGORITHMS, ids=[algorithm.name for algorithm in ALGORITHMS])
def algorithm(request) -> Algorithm:
    return request.param


@pytest.fixture
def device(request) -> str:
    """The torch device of ``--device``: where the tests that take it build their models."""
    return request.config.getoption("device")
