"""The exception a record carries: its first exception line, its root cause and the first frame of the application.

A Java stack trace as log4j/logback print it under the record's first line::

    org.apache.kafka.streams.errors.StreamsException: Exception caught in process. taskId=0_0, ...
    	at org.apache.kafka.streams.processor.internals.StreamTask.process(StreamTask.java:750)
    Caused by: java.lang.NullPointerException: Cannot invoke "String.length()" because "value" is null
    	at com.example.streams.Enricher.apply(Enricher.java:42)

The application's frame is the first ``at`` line, top to bottom, whose class is none of the JVM's or
Kafka's (``java.``, ``javax.``, ``jdk.``, ``sun.``, ``com.sun.``, ``org.apache.kafka.``, ``kafka.``,
``scala.``, ``kotlin.``): where to look first. Lines are counted from the record's first line, so each
part names the log line it is on.
"""

from __future__ import annotations

from dataclasses import dataclass

import regex

_EXCEPTION = regex.compile(r"^(?:Caused by: )?(?P<text>(?:[A-Za-z_$][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error|Throwable)\b.*)$")
_FRAME = regex.compile(r"^\s*at (?P<frame>(?P<cls>[\w$.]+)\.[\w$<>]+\([^)]*\))")
# A JVM's or Kafka's own frames: not where an application's bug is.
_NOT_APPLICATION = ("java.", "javax.", "jdk.", "sun.", "com.sun.", "org.apache.kafka.", "kafka.", "scala.", "kotlin.")


@dataclass(frozen=True)
class Thrown:
    """What a record's stack trace says, each part with its log line."""

    source: str
    line: int                  # the record's first line
    exception: str             # the first exception line: class and message
    exception_line: int
    root_cause: str | None = None    # the last "Caused by:" (class and message), when there is one
    root_cause_line: int | None = None
    frame: str | None = None   # the first frame in the application's code, e.g. com.example.App.run(App.java:42)
    frame_line: int | None = None

    @property
    def error(self) -> str:
        """The exception class (of the root cause when there is one)."""
        return (self.root_cause or self.exception).split(":", 1)[0].strip()

    def words(self) -> str:
        """One line: the exception, its root cause, and where in the application."""
        text = self.exception
        if self.root_cause and self.root_cause != self.exception:
            text += f"; caused by {self.root_cause}"
        if self.frame:
            text += f" (at {self.frame})"
        return text

    def parts(self) -> list[tuple[str, str, str]]:
        """(label, text, file:line) of each part the trace gives, for every format to render alike."""
        out = [("exception", self.exception, f"{self.source}:{self.exception_line}")]
        if self.root_cause and self.root_cause != self.exception:
            out.append(("caused by", self.root_cause, f"{self.source}:{self.root_cause_line}"))
        if self.frame:
            out.append(("at", self.frame, f"{self.source}:{self.frame_line}"))
        return out

    def to_dict(self) -> dict:
        return {"source": self.source, "line": self.line, "exception": self.exception,
                "exception_line": self.exception_line, "root_cause": self.root_cause,
                "root_cause_line": self.root_cause_line, "frame": self.frame, "frame_line": self.frame_line}


def application_frame(cls: str) -> bool:
    return not cls.startswith(_NOT_APPLICATION)


def thrown(event: dict) -> Thrown | None:
    """The exception the event's record carries (its stack trace), or the exception its first line states when the
    record has no trace ("Exception in thread "x" java.lang.IllegalStateException: ..."); None when it has none."""
    text = event.get("message") or ""
    lines = text.split("\n")
    first = last = frame = None
    for number, line in enumerate(lines):
        if number == 0:
            at = _first_line_exception(line)
            if at is not None:
                first = (line[at:].strip(), 0)
            continue
        m = _EXCEPTION.match(line.strip())
        if m:
            if first is None:
                first = (m["text"].strip(), number)
            elif line.lstrip().startswith("Caused by: "):
                last = (m["text"].strip(), number)
            continue
        f = _FRAME.match(line)
        if f and frame is None and application_frame(f["cls"]):
            frame = (f["frame"], number)
    if first is None:
        return None
    base = int(event.get("line") or 0)
    return Thrown(event.get("source") or "?", base, first[0], base + first[1],
                  last[0] if last else None, base + last[1] if last else None,
                  frame[0] if frame else None, base + frame[1] if frame else None)


_IN_LINE = regex.compile(r"(?:^|[\s\"'])(?P<cls>(?:[a-z_$][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error|Throwable))(?::|$|\s)")


def _first_line_exception(line: str) -> int | None:
    """Where an exception the record's first line itself states begins (the JVM's "Exception in thread ..."
    line has it there), else None."""
    if "xception in thread" not in line:
        return None
    m = _IN_LINE.search(line)
    return m.start("cls") if m else None
