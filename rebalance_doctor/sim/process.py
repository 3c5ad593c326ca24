"""A JVM on a host: its log, its threads, and what can happen to it (a GC pause, a crash, a restart).

Every thread of the process is a simulation process; ``gate()`` holds a thread while the JVM is
paused (a stop-the-world GC: no heartbeat, no poll, no line written), ``crash()`` ends them all
without a word (kill -9, OOM-killed pod), and ``stop()`` ends them after the application has closed
its clients.
"""

from __future__ import annotations

from .clock import Event, Interrupt, Process
from .logs import ProcessLog


class Jvm:
    def __init__(self, world, host: str, log: ProcessLog, ip: str):
        self.world = world
        self.env = world.env
        self.rng = world.rng
        self.host = host
        self.log = log
        self.ip = ip
        self.paused_until = 0.0
        self.alive = True
        self.threads: list[Process] = []
        log.alive = True

    def spawn(self, generator, name: str = "") -> Process:
        process = self.env.process(self._guard(generator), name)
        self.threads.append(process)
        return process

    def _guard(self, generator):
        try:
            result = yield from generator
            return result
        except Interrupt:
            return None

    def gate(self) -> Event:
        """Resolves when the JVM runs (at once unless a GC pause holds it)."""
        return self.env.timeout(max(0.0, self.paused_until - self.env.now))

    def sleep(self, ms: float):
        """A thread's sleep that also waits out a GC pause."""
        yield self.env.timeout(ms)
        if self.paused_until > self.env.now:
            yield self.gate()

    def pause(self, ms: float) -> None:
        self.paused_until = max(self.paused_until, self.env.now + ms)

    @property
    def paused(self) -> bool:
        return self.paused_until > self.env.now

    def crash(self) -> None:
        """Killed without closing anything: the log ends, no LeaveGroup is sent."""
        self.alive = False
        self.log.alive = False
        for thread in self.threads:
            thread.interrupt("crash")

    def stop(self) -> None:
        """The process exits after its application code has shut down its clients."""
        self.alive = False
        for thread in self.threads:
            thread.interrupt("stop")
        self.log.alive = False
