"""The training digests (scripts/training_digest.py): training unchanged to the bit against the committed digests."""

import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "benchmarks" / "training_digest.txt"


@pytest.fixture(scope="module")
def script() -> dict:
    return runpy.run_path(str(ROOT / "scripts" / "training_digest.py"), run_name="training_digest")


def test_training_matches_committed_digests(script: dict) -> None:
    expected = COMMITTED.read_text().splitlines()
    lines = [f"{name} {value}" for name, value in script["digests"]().items()]
    assert sorted(line.split()[0] for line in lines) == sorted(line.split()[0] for line in expected[1:])
    if expected[0] != script["environment"]():
        # Another library version or CPU may round differently: the digests hold for the one they were made with
        pytest.skip(f"digests made with {expected[0][2:]}, here {script['environment']()[2:]}")
    assert script["differences"](lines, expected) == []


def test_differences_names_each_changed_line(script: dict) -> None:
    expected = ["# numpy", "a 1 2", "b 3 4"]
    assert script["differences"](["a 1 2", "b 3 4"], expected) == []
    assert script["differences"](["a 1 2", "b 3 5"], expected) == ["  expected b 3 4", "  got      b 3 5"]
