"""The tests' fork server (tests/forkserver.py) runs a command as a fresh ``python`` process would."""

import subprocess
import sys

import pytest

from tests.forkserver import SERVER

SCRIPT = """
import atexit, os, sys, warnings
atexit.register(lambda: print("at exit"))
print("argv", sys.argv[1:], "cwd", os.getcwd(), "path0", sys.path[0], "name", __name__, "env", os.environ.get("PROBE"))
print("stdin", repr(sys.stdin.read()))
warnings.warn("a warning a user would see")
print("to stderr", file=sys.stderr)
if "--raise" in sys.argv:
    raise ValueError("a traceback")
sys.exit(int(sys.argv[1]))
"""


def script_lines(stderr: str) -> list[str]:
    """:return: the lines of ``stderr`` that the script's code wrote or that name its frames"""
    own = ("probe.py", "ValueError", "to stderr", "warn", "raise ")
    return [line for line in stderr.splitlines() if any(part in line for part in own)]


def both(*args, cwd):
    """:return: the command run by the fork server and as a plain subprocess, with their absolute paths made alike"""
    forked = SERVER.run(*args, cwd=cwd, timeout=60)
    plain = subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    return forked, plain


@pytest.mark.parametrize("status", ["0", "3", "--raise"])
def test_a_script_or_a_module_runs_as_in_a_fresh_process(tmp_path, monkeypatch, status):
    (tmp_path / "probe.py").write_text(SCRIPT)
    (tmp_path / "sub").mkdir()
    monkeypatch.setenv("PROBE", "seen")
    for args in ([str(tmp_path / "probe.py"), status], ["-m", "probe", status]):
        forked, plain = both(*args, cwd=tmp_path)
        assert (forked.returncode, forked.stdout) == (plain.returncode, plain.stdout)
        # the same warning and the same traceback from the script's frames on (not the server's runpy frames)
        assert script_lines(forked.stderr) == script_lines(plain.stderr)
        assert "a warning a user would see" in forked.stderr and "at exit" in forked.stdout
    assert plain.returncode == {"0": 0, "3": 3, "--raise": 1}[status]


def test_a_command_past_its_timeout_is_killed_and_the_server_serves_on(tmp_path):
    (tmp_path / "sleep.py").write_text("import time\nprint('started', flush=True)\ntime.sleep(60)\n")
    with pytest.raises(subprocess.TimeoutExpired) as timeout:
        SERVER.run(str(tmp_path / "sleep.py"), cwd=tmp_path, timeout=1)
    assert timeout.value.output == "started\n"
    (tmp_path / "probe.py").write_text(SCRIPT)
    assert SERVER.run(str(tmp_path / "probe.py"), "4", cwd=tmp_path, timeout=60).returncode == 4


def test_each_command_draws_its_own_random_state_and_sees_the_environment_as_passed(tmp_path, monkeypatch):
    (tmp_path / "draw.py").write_text(
        "import os, numpy, torch\nprint(numpy.random.rand(), float(torch.rand(1)), os.environ.get('PROBE'))\n"
    )
    monkeypatch.setenv("PROBE", "set")
    first = SERVER.run(str(tmp_path / "draw.py"), cwd=tmp_path, timeout=60).stdout
    monkeypatch.delenv("PROBE")
    second = SERVER.run(str(tmp_path / "draw.py"), cwd=tmp_path, timeout=60).stdout
    assert first.split()[2] == "set" and second.split()[2] == "None"
    assert first.split()[:2] != second.split()[:2]
    assert not SERVER.plain  # the server is on: the imports print nothing
