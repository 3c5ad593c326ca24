"""Every process the lab starts: its own process group, a deadline, stopped by its pid whatever happens."""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from .errors import INTERNAL, LabError


@dataclass
class Proc:
    name: str
    argv: list[str]
    popen: subprocess.Popen
    console: Path                      # what the process printed (not a recorded log)
    started: float = field(default_factory=time.time)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None


class Supervisor:
    """Starts processes in new sessions and guarantees that every one of them is gone at the end."""

    def __init__(self, workdir: Path, deadline_s: float):
        self.workdir = workdir
        self.deadline = time.monotonic() + deadline_s
        self.procs: dict[str, Proc] = {}
        self.history: list[Proc] = []
        atexit.register(self.stop_all)

    def check_deadline(self) -> None:
        if time.monotonic() > self.deadline:
            raise LabError("the scenario ran past its deadline; every process it started was stopped", INTERNAL)

    def start(self, name: str, argv: list[str], env: dict | None = None, cwd: Path | None = None) -> Proc:
        if name in self.procs and self.procs[name].alive():
            raise LabError(f"process {name} is already running", INTERNAL)
        console = self.workdir / "console" / f"{name}.{len(self.history)}.out"
        console.parent.mkdir(parents=True, exist_ok=True)
        with open(console, "wb") as out:
            popen = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env={**os.environ, **(env or {})}, cwd=str(cwd or self.workdir),
                                     start_new_session=True)
        proc = Proc(name, argv, popen, console)
        self.procs[name] = proc
        self.history.append(proc)
        return proc

    def signal(self, name: str, signum: int) -> None:
        proc = self.procs[name]
        if proc.alive():
            try:
                os.killpg(proc.pid, signum)
            except ProcessLookupError:
                pass

    def stop(self, name: str, graceful_s: float = 25.0) -> int | None:
        """SIGTERM (the orchestrator's stop), SIGKILL after ``graceful_s``; the exit status."""
        proc = self.procs.get(name)
        if proc is None:
            return None
        self.signal(name, signal.SIGCONT)   # a paused process cannot act on SIGTERM
        self.signal(name, signal.SIGTERM)
        try:
            return proc.popen.wait(timeout=graceful_s)
        except subprocess.TimeoutExpired:
            self.signal(name, signal.SIGKILL)
            return proc.popen.wait(timeout=10)

    def kill(self, name: str) -> None:
        proc = self.procs.get(name)
        if proc is not None:
            self.signal(name, signal.SIGKILL)
            proc.popen.wait(timeout=10)

    def freeze_all(self) -> None:
        """SIGSTOP every running process at once: the logs end at the same instant, as when collected."""
        for name, proc in self.procs.items():
            if proc.alive():
                self.signal(name, signal.SIGSTOP)

    def stop_all(self) -> None:
        for proc in self.history:
            if proc.popen.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for proc in self.history:
            try:
                proc.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        atexit.unregister(self.stop_all)


def wait_for(predicate, timeout_s: float, what: str, supervisor: Supervisor | None = None,
             interval_s: float = 0.2) -> None:
    """Poll ``predicate`` until true; a LabError naming ``what`` after ``timeout_s``."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return
        if supervisor is not None:
            supervisor.check_deadline()
        time.sleep(interval_s)
    raise LabError(f"{what} did not happen within {timeout_s:.0f} s", INTERNAL)


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_in_use(port: int) -> bool:
    import socket
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False
