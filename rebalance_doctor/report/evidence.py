"""Evidence lines as every report shows them: the message whole, the layout's envelope shortened.

A record's first line is the layout's envelope (timestamp, level, thread, logger) around the
message. Reports need the message: the record is split again with the layout its file was read
with (the accounting names it), and shown as ``time LEVEL logger: message``: the date (the
report's window gives it), the thread and the logger's packages are left out, the message is
never cut. Where the layout cannot split it, the line is shown as written with its logger
abbreviated. Every string goes through ``visible``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.stats import RunStats
from ..timeline.model import Evidence
from .safe_text import visible

_DATE = re.compile(r"^\[?\d{4}-\d{2}-\d{2}[ T]")
_EPOCH = re.compile(r"[\d.]+")   # JSON layouts' epoch milliseconds: shown as a time of day instead


def abbreviate_logger(logger: str) -> str:
    """``org.apache.kafka.clients.consumer.internals.AbstractCoordinator`` -> ``o.a.k.c.c.i.AbstractCoordinator``
    (logback's ``%logger{0}`` shape: the class whole, its packages by their first letter)."""
    parts = logger.split(".")
    if len(parts) < 3:
        return logger
    return ".".join([p[:1] for p in parts[:-1]] + parts[-1:])


def simple_logger(logger: str) -> str:
    """The class name of a logger: ``AbstractCoordinator``."""
    return logger.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class Line:
    """One evidence line ready to show, every part made visible."""

    ref: str            # source:line
    envelope: str       # "10:00:00,000 WARN AbstractCoordinator" (may be empty)
    message: str        # the message's first line, whole
    written: str        # the record's first line as written (logger abbreviated)
    host: str | None
    ts: object

    @property
    def text(self) -> str:
        """The compact line: shortened envelope and the whole message."""
        return f"{self.envelope}: {self.message}" if self.envelope else self.message


class EvidenceIndex:
    """Splits evidence lines with the layout their file was read with (from the accounting)."""

    def __init__(self, stats: RunStats | None = None):
        self._files = {f.source: (f.layout, f.container) for f in (stats.files if stats else [])}
        self._layouts = None

    def _layout(self, source: str):
        name, container = self._files.get(source, (None, None))
        if not name:
            return None, None
        from ..core.layouts import GENERIC, layout_from_pattern, load_layouts

        if self._layouts is None:
            try:
                self._layouts = load_layouts()
            except (OSError, ValueError):
                return None, None
        layout = self._layouts.by_name(name)
        if layout is None and name.startswith("custom:"):
            try:
                layout = layout_from_pattern(name[len("custom:"):], check=False)
            except ValueError:
                layout = None
        if layout is None and name == GENERIC.name:
            layout = GENERIC
        strip = next((c.compiled() for c in self._layouts.containers if c.name == container), None)
        return layout, strip

    def line(self, evidence: Evidence) -> Line:
        first = evidence.text.split("\n", 1)[0]
        layout, strip = self._layout(evidence.source)
        envelope = None
        if layout is not None:
            text = strip.sub("", first, count=1) if strip is not None else first
            try:
                envelope = layout.split(text)
            except Exception:  # a display nicety must never fail a report
                envelope = None
        written = first
        if envelope is not None and envelope.logger and "." in envelope.logger:
            written = first.replace(envelope.logger, abbreviate_logger(envelope.logger), 1)
        if envelope is None or not envelope.msg.strip():
            return Line(_v(evidence.ref()), "", _v(written), _v(written), evidence.host, evidence.ts)
        parts = []
        if envelope.ts and not _EPOCH.fullmatch(envelope.ts):
            parts.append(_DATE.sub("", envelope.ts).rstrip("]") if _DATE.match(envelope.ts) else envelope.ts)
        elif evidence.ts is not None:
            parts.append(f"{evidence.ts:%H:%M:%S.%f}"[:-3])
        if envelope.level:
            parts.append(envelope.level.strip())
        if envelope.logger:
            parts.append(simple_logger(envelope.logger.split(":", 1)[0]))
        message = envelope.msg.split("\n", 1)[0].strip()
        return Line(_v(evidence.ref()), _v(" ".join(parts)), _v(message), _v(written), evidence.host, evidence.ts)


def _v(text: str) -> str:
    return visible(text, keep_newlines=False)
