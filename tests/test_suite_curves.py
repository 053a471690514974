"""
A suite's learning curves, one figure per task (``sb3_gpg_bench.suite_curves``): the runs the report counts, small
PNGs made again byte for byte, and the committed figures made again from the committed runs.
"""

import json
import re
import struct
from pathlib import Path

import numpy as np
import pytest

from sb3_gpg_bench.suite_curves import CURVES, RENDERED_WITH, counted_found, drawn_elsewhere, mean_std, write_task_curves
from sb3_gpg_bench.suites import SUITES, Setting, Suite
from tests.test_suite_report import fake_run

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
# what the committed figures were made of (the commands of docs/benchmarks/curves.md): the folder written, the folders
# read, and the settings and seeds drawn (None: the report's own choice: finals.json, or every run the folder holds)
COMMITTED = {
    "zoo": (BENCHMARKS / "zoo_suite", [BENCHMARKS / "zoo_suite"], None, None),
    "swap": (BENCHMARKS / "swap" / "fresh_seeds", [BENCHMARKS / "swap" / "fresh_seeds"], None, None),
}


def png_chunks(path: Path) -> dict[bytes, bytes]:
    """:return: the PNG's chunks by type (the last of each type)"""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, at = {}, 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        chunks[data[at + 4 : at + 8]] = data[at + 8 : at + 8 + length]
        at += 12 + length
    return chunks


def test_each_task_gets_a_small_figure_made_again_byte_for_byte(tmp_path):
    suite = Suite(["CartPole-v1", "Pendulum-v1", "Acrobot-v1"], [Setting("ppo", "ppo"), Setting("gpg", "gpg")], "ppo", 0)
    for seed in (0, 1):
        fake_run(tmp_path, f"CartPole-v1__ppo__seed{seed}", [400.0 + 50 * seed] * 10)
        fake_run(tmp_path, f"Pendulum-v1__ppo__seed{seed}", [-200.0 - 50 * seed] * 10)
    for seed in (0, 1, 2):
        fake_run(tmp_path, f"CartPole-v1__gpg__seed{seed}", [450.0 + 10 * seed] * 10)
    found = counted_found(suite, [tmp_path], suite.tasks)
    assert {key: sorted(runs) for key, runs in found.items()} == {
        ("CartPole-v1", "ppo"): [0, 1],
        ("CartPole-v1", "gpg"): [0, 1, 2],
        ("Pendulum-v1", "ppo"): [0, 1],
    }
    first = write_task_curves(suite, found, suite.tasks, tmp_path / "first")
    # the runs listed the other way round: the same bytes
    reverse = {key: dict(reversed(runs.items())) for key, runs in reversed(found.items())}
    second = write_task_curves(suite, reverse, suite.tasks, tmp_path / "second")
    assert [path.name for path in first] == ["CartPole-v1.png", "Pendulum-v1.png"]  # no runs of Acrobot-v1: no figure
    for one, other in zip(first, second, strict=True):
        assert one.read_bytes() == other.read_bytes()
        chunks = png_chunks(one)
        assert struct.unpack(">II", chunks[b"IHDR"][:8]) == (400, 280)
        # no text chunk: nothing names the software or a date
        assert not {b"tEXt", b"iTXt", b"zTXt", b"tIME"} & set(chunks)
        assert one.stat().st_size < 60_000
    import matplotlib

    assert json.loads((tmp_path / "first" / RENDERED_WITH).read_text())["matplotlib"] == matplotlib.__version__


def test_the_mean_and_std_over_seeds_are_taken_at_the_steps_every_seed_was_evaluated_at(tmp_path):
    fake_run(tmp_path, "a", [100.0] * 10)
    fake_run(tmp_path, "b", [300.0] * 10)
    # run b evaluated at every other step only (fake_run's steps: 100 to 2000)
    data = np.load(tmp_path / "runs" / "b" / "evaluations.npz")
    np.savez(tmp_path / "runs" / "b" / "evaluations.npz", timesteps=data["timesteps"][1::2], results=data["results"][1::2])
    steps, mean, std = mean_std({1: tmp_path / "runs" / "b", 0: tmp_path / "runs" / "a"})
    np.testing.assert_array_equal(steps, np.arange(200, 2001, 200))
    fraction = np.linspace(0.0, 1.0, 20)[1::2]  # fake_run's returns rise linearly to the final ones
    np.testing.assert_allclose(mean, 200.0 * fraction)
    np.testing.assert_allclose(std, 100.0 * fraction)


def test_counted_found_reads_several_folders_each_with_its_finals(tmp_path):
    suite = Suite(["CartPole-v1"], [Setting("ppo", "ppo"), Setting("gpg", "gpg")], "ppo", 0)
    for seed in (0, 1, 10):
        fake_run(tmp_path / "gpg", f"CartPole-v1__gpg__seed{seed}", [450.0] * 10)
    fake_run(tmp_path / "ppo", "CartPole-v1__ppo__seed0", [500.0] * 10)
    finals = {"CartPole-v1": {"gpg": {"seeds": [10], "why": "the new entry"}}}
    (tmp_path / "gpg" / "finals.json").write_text(json.dumps(finals))
    found = counted_found(suite, [tmp_path / "gpg", tmp_path / "ppo"], suite.tasks)
    # the suite's order of settings, whatever the folders' order; the finals of the folder they are in
    assert {key: sorted(runs) for key, runs in found.items()} == {("CartPole-v1", "ppo"): [0], ("CartPole-v1", "gpg"): [10]}
    assert list(found) == [("CartPole-v1", "ppo"), ("CartPole-v1", "gpg")]
    # seeds given: those seeds, whatever finals.json says
    assert sorted(counted_found(suite, [tmp_path / "gpg"], suite.tasks, seeds=[0, 1])[("CartPole-v1", "gpg")]) == [0, 1]
    fake_run(tmp_path / "ppo", "CartPole-v1__gpg__seed10", [450.0] * 10)
    with pytest.raises(ValueError, match="seeds \\[10\\] are in"):
        counted_found(suite, [tmp_path / "gpg", tmp_path / "ppo"], suite.tasks)


@pytest.mark.parametrize("name", COMMITTED)
def test_the_committed_figures_are_made_again_from_the_committed_runs(tmp_path, name):
    out, folders, settings, seeds = COMMITTED[name]
    suite = SUITES[name]
    found = counted_found(suite, folders, suite.tasks, settings, seeds)
    committed = sorted((out / CURVES).glob("*.png"))
    assert [path.stem for path in committed] == sorted({env_id for env_id, _ in found})
    assert all(path.stat().st_size < 512_000 for path in committed)
    # one task's figure: the rendering (rasteriser, fonts, PNG encoder) is matplotlib's and Pillow's, so the bytes are
    # compared where the versions that made the committed figures are installed
    import matplotlib
    import PIL

    rendered_with = json.loads((out / CURVES / RENDERED_WITH).read_text())
    if {key: rendered_with[key] for key in ("matplotlib", "pillow")} != {
        "matplotlib": matplotlib.__version__,
        "pillow": PIL.__version__,
    }:
        pytest.skip(f"the committed figures were made with {rendered_with}")
    env_id = "CartPole-v1"
    (made,) = write_task_curves(suite, {key: runs for key, runs in found.items() if key[0] == env_id}, [env_id], tmp_path)
    assert made.read_bytes() == (out / CURVES / made.name).read_bytes(), f"make it again: docs/benchmarks/curves.md ({name})"


def test_the_docs_page_shows_every_committed_figure():
    page = (ROOT / "docs" / "benchmarks" / "curves.md").read_text()
    shown = set(re.findall(r"\]\(\.\./\.\./(benchmarks/\S+\.png)\)", page))
    committed = {path.relative_to(ROOT).as_posix() for out, *_ in COMMITTED.values() for path in (out / CURVES).glob("*.png")}
    assert shown == committed, sorted(shown ^ committed)


def test_a_report_leaves_the_figures_the_curves_command_drew_from_other_folders(tmp_path):
    folder = tmp_path / CURVES
    folder.mkdir()
    assert not drawn_elsewhere(folder)
    (folder / RENDERED_WITH).write_text(json.dumps({"matplotlib": "x", "pillow": "y"}))
    assert not drawn_elsewhere(folder)  # a report's own figures: the report redraws them
    (folder / RENDERED_WITH).write_text(json.dumps({"matplotlib": "x", "pillow": "y", "drawn_from": ["elsewhere"]}))
    assert drawn_elsewhere(folder)
