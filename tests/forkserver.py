"""
The tests' command lines, each in a process of its own without paying the imports again: a server that has imported
torch, SB3, sb3-contrib, RL Zoo and sb3_gpg once forks a child per command, and the child runs it as ``python -m`` or
``python script.py`` would (its own argv, folder, environment, stdin, stdout and stderr, exit status, atexit handlers).

A fresh interpreter spends seconds of CPU on these imports before reading its argv; the test suite runs about a
hundred commands. Where the imports themselves print anything (a warning a fresh process would show on stderr), the
client runs every command as a plain subprocess instead, so that no output a user would see goes missing. The tests
that check what a command imports run it as a plain subprocess.

Run as a script, this module is the server: it reads one JSON request a line on stdin and answers each with one line.
"""

import atexit
import importlib.util
import json
import os
import runpy
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any

# What the CLIs and scripts under test import first; those absent (a check of the core install) are left out
PRELOAD = ("torch", "gymnasium", "stable_baselines3", "sb3_contrib", "rl_zoo3.train", "sb3_gpg", "sb3_gpg.zoo")


def _exit_code(error: SystemExit) -> int:
    """:return: the status a Python process exits with on ``error`` (printing its message, as the interpreter does)"""
    if error.code is None:
        return 0
    if isinstance(error.code, int):
        return error.code
    print(error.code, file=sys.stderr)
    return 1


def _child(request: dict[str, Any], replies: int) -> None:
    """Run the request's command in this forked process and exit with its status; never returns."""
    code = 1
    try:
        os.setsid()  # its own process group: a timeout kills what it started too
        os.close(replies)
        streams = ((0, os.devnull, os.O_RDONLY), (1, request["stdout"], os.O_WRONLY), (2, request["stderr"], os.O_WRONLY))
        for fd, path, flags in streams:
            opened = os.open(path, flags)
            os.dup2(opened, fd)
            os.close(opened)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        args = request["args"]
        if args[0] == "-m":
            sys.argv = [args[1], *args[2:]]
            sys.path[0] = os.getcwd()  # python -m puts the working folder first
            runpy.run_module(args[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(args)
            sys.path[0] = str(Path(args[0]).resolve().parent)  # python script.py puts the script's folder first
            runpy.run_path(args[0], run_name="__main__")
        code = 0
    except SystemExit as error:
        code = _exit_code(error)
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        try:  # what the interpreter does on its way out: join the threads, run the atexit handlers, flush
            threading._shutdown()  # type: ignore[attr-defined]
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _wait(pid: int, timeout: float) -> int | None:
    """:return: the child's exit status, or None once it ran past ``timeout`` seconds (it and its group killed)"""
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.01)


def serve() -> None:
    replies = os.fdopen(os.dup(1), "w")
    errors = os.dup(2)
    # What the imports print goes to a file, so that the client can tell whether a fresh process would have shown it
    with tempfile.TemporaryFile() as printed:
        os.dup2(printed.fileno(), 1)
        os.dup2(printed.fileno(), 2)
        for name in PRELOAD:
            if importlib.util.find_spec(name.split(".")[0]) is not None:
                importlib.import_module(name)
        sys.stdout.flush()
        sys.stderr.flush()
        printed.seek(0)
        replies.write(json.dumps({"printed": printed.read().decode(errors="replace")}) + "\n")
        replies.flush()
    os.dup2(errors, 2)  # the server's own failures are shown
    os.dup2(errors, 1)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request, replies.fileno())
        replies.write(json.dumps({"status": _wait(pid, request["timeout"])}) + "\n")
        replies.flush()


class ForkServer:
    """The client: ``run`` is ``subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True)``."""

    def __init__(self) -> None:
        self.server: subprocess.Popen | None = None
        self.plain = False  # the imports printed something: plain subprocesses only

    def _start(self) -> None:
        self.server = subprocess.Popen(
            [sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=tempfile.gettempdir()
        )
        assert self.server.stdout is not None
        ready = json.loads(self.server.stdout.readline())
        self.plain = bool(ready["printed"])
        atexit.register(self.close)

    def close(self) -> None:
        if self.server is not None and self.server.poll() is None:
            assert self.server.stdin is not None
            self.server.stdin.close()
            self.server.wait(timeout=30)

    def run(self, *args: str, cwd: Any, timeout: float) -> subprocess.CompletedProcess:
        if self.server is None:
            self._start()
        if self.plain:
            return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)
        assert self.server is not None and self.server.stdin is not None and self.server.stdout is not None
        with tempfile.TemporaryDirectory() as folder:
            stdout, stderr = Path(folder, "stdout"), Path(folder, "stderr")
            stdout.touch()
            stderr.touch()
            request = dict(args=list(args), cwd=str(Path(cwd).resolve()), env=dict(os.environ), timeout=timeout,
                           stdout=str(stdout), stderr=str(stderr))  # fmt: skip
            self.server.stdin.write(json.dumps(request) + "\n")
            self.server.stdin.flush()
            status = json.loads(self.server.stdout.readline())["status"]
            output, errors = stdout.read_text(errors="replace"), stderr.read_text(errors="replace")
        command = [sys.executable, *args]
        if status is None:
            raise subprocess.TimeoutExpired(command, timeout, output, errors)
        return subprocess.CompletedProcess(command, status, output, errors)


SERVER = ForkServer()

if __name__ == "__main__":
    serve()
