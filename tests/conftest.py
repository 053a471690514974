"""
The tests' fixtures: ``group_case`` (an entry of ``CASES``: random rollouts, the group options and the reference) and
``algorithm`` (each of the four algorithms, for the tests by feature). The helpers they use are in tests/helpers.py.

A test that takes ``group_case`` runs once per entry of ``CASES``, or of a slice of it marked with
``@pytest.mark.cases(start, stop, step)`` (the masked and recurrent buffers run a third each: their own code is in how
samples leave the buffer, not in the estimator, which ``test_estimator`` checks on all cases).

``device`` is the torch device of ``--device`` (default "cpu"; "cuda" on a machine with a GPU): the tests that take it
build their models there, so ``pytest --device cuda`` runs them on the GPU. The tests that pin ``device="cpu"`` stay on
the CPU (learning thresholds, digests and comparisons made with the CPU's arithmetic), and the rest take SB3's
``device="auto"``: the GPU wherever one is visible.
"""

import pytest
import torch as th

from tests.helpers import ALGORITHMS, CASES, Algorithm, GroupCase, case_id

# The tests' MLPs on CPU, as the main job and the scripts: one torch thread is fastest, more only contend for the
# cores (many times slower on a busy machine)
th.set_num_threads(1)


def pytest_addoption(parser):
    parser.addoption(
        "--device",
        default="cpu",
        help='torch device of the models of the tests that take the "device" fixture: cpu (default), or cuda (cuda:N)',
    )


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
