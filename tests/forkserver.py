"""
The tests' command lines, each in a process of its own without paying the imports again: a server that has imported
torch, SB3, sb3-contrib, RL Zoo and sb3_gpg once forks a child per command, and the child runs it as ``python -m`` or
``python script.py`` would (its own argv, folder, environment, stdin, stdout and stderr, exit status, atexit handlers,
fresh random states).

A fresh interpreter spends seconds of CPU on these imports before reading its argv; the test suite runs about a
hundred commands. Where the imports themselves print anything (a warning a fresh process would show on stderr), the
client runs every command as a plain subprocess instead, so that no output a user would see goes missing; so it does
where a variable read only at start-up (PYTHON*, *_NUM_THREADS, MPLBACKEND, ...) differs from the server's. What the
imports set up is there for every command: the modules (RL Zoo's extra env ids included) and their atexit handlers.
The tests that check what a command imports run it as a plain subprocess.

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
import warnings
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


def _child(request: dict[str, Any], replies: int, errors: int) -> None:
    """Run the request's command in this forked process and exit with its status; never returns."""
    code = 1
    try:
        os.setsid()  # its own process group: a timeout kills what it started too
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.close(replies)
        os.close(errors)
        streams = ((0, os.devnull, os.O_RDONLY), (1, request["stdout"], os.O_WRONLY), (2, request["stderr"], os.O_WRONLY))
        for fd, path, flags in streams:
            opened = os.open(path, flags)
            os.dup2(opened, fd)
            os.close(opened)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        # A fresh process draws fresh random states; a forked one would share the server's
        if "numpy" in sys.modules:
            sys.modules["numpy"].random.seed()
        if "torch" in sys.modules:
            sys.modules["torch"].seed()
        if "multiprocessing" in sys.modules:  # where spawned workers find a script given by a relative path
            sys.modules["multiprocessing"].process.ORIGINAL_DIR = os.getcwd()
        args = request["args"]
        if args[0] == "-m":
            sys.argv = [args[1], *args[2:]]
            sys.path[0] = os.getcwd()  # python -m puts the working folder first
            runpy.run_module(args[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(args)
            sys.path[0] = str(Path(args[0]).resolve().parent)  # python script.py puts the script's folder first
            runpy.run_path(str(Path(args[0]).resolve()), run_name="__main__")  # __file__ absolute, as python's
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
    # (an import that fails prints its traceback there: the client then runs plain subprocesses and says why)
    with tempfile.TemporaryFile() as printed:
        os.dup2(printed.fileno(), 1)
        os.dup2(printed.fileno(), 2)
        try:
            for name in PRELOAD:
                if importlib.util.find_spec(name.split(".")[0]) is not None:
                    importlib.import_module(name)
        except Exception:
            traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
        printed.seek(0)
        replies.write(json.dumps({"printed": printed.read().decode(errors="replace")}) + "\n")
        replies.flush()
    os.dup2(errors, 2)  # the server's own failures are shown
    os.dup2(errors, 1)
    running: list[int] = []

    def stop(signum: int, frame: Any) -> None:  # interrupted (Ctrl-C reaches the whole group): the command stops too
        for pid in running:
            os.killpg(pid, signal.SIGKILL)
        os._exit(128 + signum)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request, replies.fileno(), errors)
        running[:] = [pid]
        status = _wait(pid, request["timeout"])
        running.clear()
        replies.write(json.dumps({"status": status}) + "\n")
        replies.flush()


class ForkServer:
    """The client: ``run`` is ``subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True)``."""

    def __init__(self) -> None:
        self.server: subprocess.Popen | None = None
        self.plain = False  # the imports printed something: plain subprocesses only
        self.started_with: dict[str, str] = {}

    def _start(self) -> None:
        self.server = subprocess.Popen(
            [sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=tempfile.gettempdir()
        )
        assert self.server.stdout is not None
        ready = json.loads(self.server.stdout.readline())
        self.plain = bool(ready["printed"])
        if self.plain:
            warnings.warn(f"the tests' fork server is off, its imports printed: {ready['printed'][-1000:]}", stacklevel=3)
        self.started_with = _read_at_start(os.environ)
        atexit.register(self.close)

    def close(self) -> None:
        if self.server is not None and self.server.poll() is None:
            assert self.server.stdin is not None
            self.server.stdin.close()
            try:
                self.server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.server.terminate()  # it kills the command it runs
        self.server = None

    def run(self, *args: str, cwd: Any, timeout: float) -> subprocess.CompletedProcess:
        command = [sys.executable, *args]
        if self.server is None:
            self._start()
        if self.plain or _read_at_start(os.environ) != self.started_with:
            return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        assert self.server is not None and self.server.stdin is not None and self.server.stdout is not None
        with tempfile.TemporaryDirectory() as folder:
            stdout, stderr = Path(folder, "stdout"), Path(folder, "stderr")
            stdout.touch()
            stderr.touch()
            request = dict(args=list(args), cwd=str(Path(cwd).resolve()), env=dict(os.environ), timeout=timeout,
                           stdout=str(stdout), stderr=str(stderr))  # fmt: skip
            try:
                self.server.stdin.write(json.dumps(request) + "\n")
                self.server.stdin.flush()
                reply = self.server.stdout.readline()
            except BaseException:  # interrupted: the server stops the command
                self.server.terminate()
                self.close()
                raise
            if not reply:
                code = self.server.wait()
                self.close()
                raise RuntimeError(f"the tests' fork server exited ({code}) while it ran {args}")
            status = json.loads(reply)["status"]
            output, errors = stdout.read_text(errors="replace"), stderr.read_text(errors="replace")
        if status is None:
            raise subprocess.TimeoutExpired(command, timeout, output, errors)
        return subprocess.CompletedProcess(command, status, output, errors)


def _read_at_start(environment: Any) -> dict[str, str]:
    """:return: the variables that the interpreter and the preloaded libraries read once, when they start"""
    return {k: v for k, v in environment.items() if k.startswith("PYTHON") or k.endswith("_NUM_THREADS") or k in AT_START}


AT_START = ("MPLBACKEND", "CUDA_VISIBLE_DEVICES", "MUJOCO_GL")
SERVER = ForkServer()

if __name__ == "__main__":
    serve()
