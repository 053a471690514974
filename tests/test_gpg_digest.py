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
    committed = script["blocks"](COMMITTED.read_text())
    lines = [f"{name} {value}" for name, value in script["digests"]().items()]
    names = sorted(line.split()[0] for line in lines)
    newest = max(committed.values(), key=len)
    # the newest block has every case; a machine's older block, the cases there were when it was made
    assert sorted(line.split()[0] for line in newest) == names
    for block in committed.values():
        assert set(line.split()[0] for line in block) <= set(names)
    here = script["environment"]()
    if here not in committed:
        # Another library version or CPU may round differently: each block holds for the machine it was made on
        pytest.skip(f"no digests made on {here[2:]}; committed: {'; '.join(line[2:] for line in committed)}")
    assert script["differences"](lines, committed[here]) == []


def test_differences_names_each_changed_line(script: dict) -> None:
    expected = ["a 1 2", "b 3 4"]
    assert script["differences"](["a 1 2", "b 3 4"], expected) == []
    assert script["differences"](["a 1 2", "b 3 5"], expected) == ["  expected b 3 4", "  got      b 3 5"]
    # a case added after the machine's block was made is not compared there; one removed since is
    assert script["differences"](["a 1 2", "b 3 4", "c 5 6"], expected) == []
    assert script["differences"](["a 1 2"], expected) == ["  expected b 3 4"]


def test_blocks_reads_one_block_per_machine(script: dict) -> None:
    text = "# numpy 1, A\na 1 2\nb 3 4\n\n# numpy 1, B, family 25 model 17\na 5 6\nb 7 8\n"
    expected = {"# numpy 1, A": ["a 1 2", "b 3 4"], "# numpy 1, B, family 25 model 17": ["a 5 6", "b 7 8"]}
    assert script["blocks"](text) == expected


def test_environment_names_the_cpu_family_and_model(script: dict) -> None:
    cpuinfo = Path("/proc/cpuinfo")
    if not cpuinfo.exists() or "cpu family" not in cpuinfo.read_text():
        pytest.skip("no /proc/cpuinfo with a CPU family here")
    assert ", family " in script["environment"]() and " model " in script["environment"]()
