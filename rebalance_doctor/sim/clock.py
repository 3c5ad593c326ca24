"""A small discrete-event scheduler: SimPy's Environment shape (processes are generators that yield events).

Time is in milliseconds since the start of the incident. A process yields an ``Event`` (a
``timeout``, another process, ``any_of`` several events, or an event some other actor succeeds
later) and is resumed with the event's value. ``Process.interrupt`` throws ``Interrupt`` into the
generator at its current ``yield`` (a crash, a kill, a cancelled wait). Events scheduled for the same
instant run in the order they were scheduled, so a run is a pure function of its inputs and seed.
"""

from __future__ import annotations

import heapq
from typing import Any, Callable, Generator, Iterable


class Interrupt(Exception):
    """Thrown into a process by ``Process.interrupt``; ``cause`` says why."""

    def __init__(self, cause: object = None):
        super().__init__(cause)
        self.cause = cause


class Event:
    """Something that happens once; callbacks run when it is processed."""

    __slots__ = ("env", "callbacks", "triggered", "processed", "value")

    def __init__(self, env: "Environment"):
        self.env = env
        self.callbacks: list[Callable[["Event"], None]] = []
        self.triggered = False      # succeed() was called (it is in the queue or done)
        self.processed = False      # its callbacks have run
        self.value: Any = None

    def succeed(self, value: Any = None, delay: float = 0) -> "Event":
        if self.triggered:
            raise RuntimeError("event already triggered")
        self.triggered = True
        self.value = value
        self.env._schedule(self, delay)
        return self

    def _process(self) -> None:
        self.processed = True
        callbacks, self.callbacks = self.callbacks, []
        for callback in callbacks:
            callback(self)


class Timeout(Event):
    __slots__ = ()

    def __init__(self, env: "Environment", delay: float, value: Any = None):
        super().__init__(env)
        if delay < 0:
            raise ValueError(f"negative delay {delay}")
        self.succeed(value, delay)


class AnyOf(Event):
    """Succeeds with the first of its events to be processed (its value: that event)."""

    __slots__ = ("events",)

    def __init__(self, env: "Environment", events: Iterable[Event]):
        super().__init__(env)
        self.events = list(events)
        for event in self.events:
            if event.processed:
                self.succeed(event)
                return
        for event in self.events:
            event.callbacks.append(self._first)

    def _first(self, event: Event) -> None:
        if not self.triggered:
            self.succeed(event)


class Process(Event):
    """A generator driven by the events it yields; as an event it succeeds with the return value."""

    __slots__ = ("generator", "waiting_on", "name")

    def __init__(self, env: "Environment", generator: Generator, name: str = ""):
        super().__init__(env)
        self.generator = generator
        self.name = name
        self.waiting_on: Event | None = None
        start = Event(env)
        start.callbacks.append(self._resume)
        start.succeed()
        self.waiting_on = start

    @property
    def is_alive(self) -> bool:
        return not self.triggered

    def interrupt(self, cause: object = None) -> None:
        """Throw Interrupt(cause) into the generator now (as the next thing to run at this instant)."""
        if not self.is_alive:
            return
        kick = Event(self.env)
        kick.callbacks.append(lambda _e: self._step(throw=Interrupt(cause)))
        self.waiting_on = kick      # whatever it waited for no longer resumes it
        kick.succeed()

    def _resume(self, event: Event) -> None:
        if event is not self.waiting_on:
            return                  # a wait abandoned by an interrupt
        self._step(send=event.value)

    def _step(self, send: Any = None, throw: BaseException | None = None) -> None:
        if not self.is_alive:
            return
        try:
            target = self.generator.throw(throw) if throw is not None else self.generator.send(send)
        except StopIteration as stop:
            self.waiting_on = None
            self.succeed(stop.value)
            return
        except Interrupt:
            self.waiting_on = None  # an unhandled interrupt ends the process quietly (a killed thread)
            self.succeed(None)
            return
        if not isinstance(target, Event):
            raise TypeError(f"process {self.name or self.generator} yielded {target!r}, not an Event")
        self.waiting_on = target
        if target.processed:
            again = Event(self.env)
            again.callbacks.append(self._resume)
            self.waiting_on = again
            again.succeed(target.value)
        else:
            target.callbacks.append(self._resume)


class Environment:
    """The clock and the queue of events; ``now`` is in milliseconds."""

    def __init__(self, start: float = 0.0):
        self.now = float(start)
        self._queue: list[tuple[float, int, Event]] = []
        self._seq = 0

    def _schedule(self, event: Event, delay: float) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (self.now + delay, self._seq, event))

    def timeout(self, delay: float, value: Any = None) -> Timeout:
        return Timeout(self, delay, value)

    def event(self) -> Event:
        return Event(self)

    def process(self, generator: Generator, name: str = "") -> Process:
        return Process(self, generator, name)

    def any_of(self, events: Iterable[Event]) -> AnyOf:
        return AnyOf(self, events)

    def call_at(self, when: float, action: Callable[[], None]) -> Event:
        """Run ``action`` at absolute time ``when`` (or now, if that has passed)."""
        event = Event(self)
        event.callbacks.append(lambda _e: action())
        event.succeed(None, max(0.0, when - self.now))
        return event

    def run(self, until: float | None = None) -> None:
        while self._queue:
            when, _, event = self._queue[0]
            if until is not None and when > until:
                break
            heapq.heappop(self._queue)
            self.now = when
            event._process()
        if until is not None:
            self.now = max(self.now, float(until))
