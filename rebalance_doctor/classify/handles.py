"""Client handles whose lines name no group: which process wrote them and what each handle lost.

A librdkafka consumer logs ``SESSTMOUT`` with its handle name only (``<client.id>#consumer-<n>``, n
counting the handles the process created); when no line of that handle names its group, the line
belongs to no group timeline. It still says what the handle lived through. A log file is the output of
one process, so the handles of one file (at one host) are consumers of one process: what several of
them lose at once is shared by the process (or its network), not by one consumer or one group.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePath


@dataclass
class Handle:
    name: str                       # the handle (librdkafka rdkafka#consumer-1, or the client.id)
    library: str
    events: list[dict] = field(default_factory=list)

    def of(self, *names: str) -> list[dict]:
        return [e for e in self.events if e["event"] in names]


@dataclass
class Process:
    """The handles of one log file at one host (one process's output)."""

    host: str
    source: str
    handles: dict[str, Handle] = field(default_factory=dict)

    @property
    def label(self) -> str:
        # A host named after the file (no better name was known) says nothing more.
        named_after_file = PurePath(self.source).name.startswith(self.host)
        return f"{self.source} at {self.host}" if self.host and not named_after_file else self.source

    def of(self, *names: str) -> list[tuple[Handle, dict]]:
        """(handle, event) of every handle's events of these names, in time order (untimed last)."""
        found = [(h, e) for h in self.handles.values() for e in h.of(*names)]
        return sorted(found, key=lambda he: (he[1].get("ts") is None, he[1].get("ts") or datetime.min,
                                             he[1].get("line") or 0))


def read(events: list[dict]) -> list[Process]:
    """The processes whose client-library lines name no group, each with its handles (lines naming no handle
    either are kept under the library's name)."""
    processes: dict[tuple[str, str], Process] = {}
    for e in events:
        if not e.get("library") or e.get("group"):
            continue
        key = (e.get("host") or "", e.get("source") or "")
        process = processes.get(key)
        if process is None:
            process = processes[key] = Process(*key)
        name = e.get("client") or e["library"]
        handle = process.handles.get(name)
        if handle is None:
            handle = process.handles[name] = Handle(name, e["library"])
        handle.events.append(e)
    return [processes[k] for k in sorted(processes)]
