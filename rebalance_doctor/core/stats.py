"""The accounting of a run: what was read, what was found, and everything skipped with a reason.

Every byte of every input is either read into a line or counted here with the reason:

* per file, ``bytes`` are the bytes taken from its decoded (decompressed) stream; ``unread``
  says which of them did not become log text: ``binary`` (NUL regions), ``oversized`` (lines
  longer than 8 MiB), ``encoding`` (byte-order marks, undecodable UTF-16), ``truncated`` (the
  piece of a line a damaged stream ends in); ``lost`` says how
  many bytes of the input on disk could not be decoded at all, by ``corrupt``, ``truncated`` or
  ``unreadable`` (0 bytes when the rest of a stream is simply missing), and ``problems`` says
  where and why in words; ``regex_timeouts`` counts records and lines a regex gave up on,
  ``regex_skipped`` those not examined once the regex time budget was spent (``regex_guard``);
* per run, ``skipped`` lists every file, archive or member not read, with a ``kind``
  (``sources.SKIP_KINDS``) and its size on disk.

``RunStats.lost_input()`` is what makes the exit code 3 ("input was lost").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

NEAR_MISS_SAMPLES = 200  # per file; every near miss is counted, the first ones are kept
LOST_REASONS = ("corrupt", "truncated", "unreadable", "shrank", "replaced")   # of FileStats.lost (filechange)
LOST_UNREAD = ("oversized",)                            # unread bytes that were log text
LOST_SKIPS = ("unreadable", "corrupt", "truncated", "too-deep")
_KINDS_BY_WORDS = (  # for callers that give a reason only (the Spark engine's units)
    ("no such file", "missing"), ("refused", "refused"), ("empty", "empty"), ("no log text", "empty"), ("binary", "not-log"),
    ("not a log", "not-log"), ("own output", "output"), ("link", "link"), ("truncated", "truncated"),
    ("ends early", "truncated"), ("corrupt", "corrupt"), ("nested deeper", "too-deep"),
)


@dataclass
class NearMiss:
    source: str
    line: int
    closest: str | None
    text: str


@dataclass
class FileStats:
    source: str
    host: str
    codec: str = "plain"
    layout: str | None = None
    layout_share: float = 0.0
    container: str | None = None
    kafka_version: str | None = None
    bytes: int = 0            # decompressed bytes read
    lines: int = 0
    candidates: int = 0       # records a scan literal hit
    events: int = 0
    near_misses: int = 0
    non_utf8_records: int = 0
    untimed_events: int = 0   # events whose timestamp could not be read
    size: int = 0             # bytes of the input on disk (compressed size for compressed inputs)
    unread: dict[str, int] = field(default_factory=dict)  # of `bytes`, not log text, by reason
    lost: dict[str, int] = field(default_factory=dict)    # input bytes not decoded, by reason
    regex_timeouts: int = 0   # records and lines a regex gave up on (read as not matching)
    regex_skipped: int = 0    # regex calls not made: the regex time budget was spent (regex_guard)
    # What file order decided about the times written (core.clock); the words are in `problems`.
    repeated_hour: int = 0        # records placed in the second pass of an hour a DST change repeats
    nonexistent_times: int = 0    # records at local times a DST change skips (read with the offset before it)
    midnights: int = 0            # days a time-of-day-only layout advanced at midnight
    backward_jumps: int = 0       # times the time went back by more than core.clock.TOLERANCE
    largest_jump_s: float = 0.0   # the largest of them, in seconds
    largest_jump_line: int = 0    # and its line
    problems: list[str] = field(default_factory=list)   # partial reads, huge lines, ...
    near_miss_samples: list[NearMiss] = field(default_factory=list)
    # A file that --cluster names: the cluster id its head states, so that the lines of another file attributed by
    # that id (a MirrorMaker 2 log's clients: core/mirror.py) are the named cluster's (timeline/clusters.py).
    # (for the analysis, not the accounting: neither in the JSON nor in the files table, so no redaction misses them)
    cluster_id: str | None = None
    cluster_name: str | None = None      # and the NAME --cluster gives it
    INTERNAL = ("cluster_id", "cluster_name")

    def merge(self, other: "FileStats") -> None:
        """Fold the stats of another byte range of the same file into this one."""
        self.cluster_id = self.cluster_id or other.cluster_id
        self.cluster_name = self.cluster_name or other.cluster_name
        for name in ("bytes", "lines", "candidates", "events", "near_misses", "non_utf8_records",
                     "untimed_events", "regex_timeouts", "regex_skipped", "repeated_hour", "nonexistent_times", "midnights",
                     "backward_jumps"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        if other.largest_jump_s > self.largest_jump_s:
            self.largest_jump_s, self.largest_jump_line = other.largest_jump_s, other.largest_jump_line
        self.size = max(self.size, other.size)
        _add_counts(self.unread, other.unread)
        _add_counts(self.lost, other.lost)
        self.problems.extend(other.problems)
        room = NEAR_MISS_SAMPLES - len(self.near_miss_samples)
        self.near_miss_samples.extend(other.near_miss_samples[:max(room, 0)])
        # Ranges come in file order: the last one knows the version the file stated last (as one
        # pass over the file would end up with).
        self.kafka_version = other.kafka_version or self.kafka_version

    def count_unread(self, reason: str, count: int) -> None:
        if count:
            self.unread[reason] = self.unread.get(reason, 0) + count

    def count_lost(self, reason: str, count: int) -> None:
        self.lost[reason] = self.lost.get(reason, 0) + count

    @property
    def input_lost(self) -> bool:
        """Log data of this file was lost: damage, an oversized line, a regex that gave up."""
        return bool(self.lost) or any(self.unread.get(r) for r in LOST_UNREAD) or self.regex_timeouts > 0 \
            or self.regex_skipped > 0

    @classmethod
    def from_dict(cls, data: dict) -> "FileStats":
        data = dict(data)
        data["near_miss_samples"] = [m if isinstance(m, NearMiss) else NearMiss(**m)
                                     for m in data.get("near_miss_samples", [])]
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in known})


def _add_counts(into: dict[str, int], other: dict[str, int]) -> None:
    for reason, count in other.items():
        into[reason] = into.get(reason, 0) + count


def skip_kind(reason: str) -> str:
    """The kind of a skip given only in words (``sources.SKIP_KINDS``)."""
    lowered = reason.lower()
    return next((kind for words, kind in _KINDS_BY_WORDS if words in lowered), "unreadable")


@dataclass
class RunStats:
    inputs: list[str] = field(default_factory=list)
    files: list[FileStats] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)   # {"source", "reason"}
    warnings: list[dict] = field(default_factory=list)  # read, but with a caveat
    packs: dict[str, str] = field(default_factory=dict)
    engine: str = "local"
    jobs: int = 1
    seconds: float = 0.0
    # Spark: where the work ran, one entry per executor ({"executor", "host", "python", "units"};
    # executor "driver" in local mode), so a run on a cluster can be told from one in local mode.
    executors: list[dict] = field(default_factory=list)

    @property
    def files_read(self) -> int:
        return len(self.files)

    @property
    def events(self) -> int:
        return sum(f.events for f in self.files)

    @property
    def bytes(self) -> int:
        return sum(f.bytes for f in self.files)

    @property
    def near_misses(self) -> int:
        return sum(f.near_misses for f in self.files)

    def skip(self, source: str, reason: str, kind: str | None = None, size: int = 0) -> None:
        self.skipped.append({"source": source, "reason": reason, "kind": kind or skip_kind(reason),
                             "bytes": size})

    def lost_input(self) -> list[str]:
        """Where log data was lost (files and skips), for the exit code; empty when none was."""
        where = [f.source for f in self.files if f.input_lost]
        return where + [s["source"] for s in self.skipped if s.get("kind") in LOST_SKIPS]

    def usage_errors(self) -> list[dict]:
        """Inputs that do not exist or cannot be read by their nature (a terminal, a device)."""
        return [s for s in self.skipped if s.get("kind") in ("missing", "refused")]

    def warn(self, source: str, message: str) -> None:
        self.warnings.append({"source": source, "message": message})

    def time_notes(self) -> dict:
        """What file order decided about the times written, in total (``core.clock``): records in
        the second pass of a repeated DST hour, at local times a DST change skips, midnights a
        time-of-day-only layout crossed, backward jumps and the largest (its file and line)."""
        largest = max(self.files, key=lambda f: f.largest_jump_s, default=None)
        return {
            "repeated_hour": sum(f.repeated_hour for f in self.files),
            "nonexistent_times": sum(f.nonexistent_times for f in self.files),
            "midnights": sum(f.midnights for f in self.files),
            "backward_jumps": sum(f.backward_jumps for f in self.files),
            "largest_jump": ({"seconds": largest.largest_jump_s, "source": largest.source,
                              "line": largest.largest_jump_line}
                             if largest is not None and largest.backward_jumps else None),
        }

    def to_dict(self) -> dict:
        files = []
        for f in self.files:
            entry = asdict(f)
            for name in ("near_miss_samples", *FileStats.INTERNAL):
                entry.pop(name)
            files.append(entry)
        unread: dict[str, int] = {}
        lost: dict[str, int] = {}
        for f in self.files:
            _add_counts(unread, f.unread)
            _add_counts(lost, f.lost)
        return {
            "inputs": self.inputs,
            "engine": self.engine,
            "jobs": self.jobs,
            "seconds": round(self.seconds, 3),
            "files_read": self.files_read,
            "size": sum(f.size for f in self.files),
            "bytes": self.bytes,
            "unread": unread,
            "lost": lost,
            "skipped_bytes": sum(s.get("bytes", 0) for s in self.skipped),
            "regex_timeouts": sum(f.regex_timeouts for f in self.files),
            "regex_skipped": sum(f.regex_skipped for f in self.files),
            "input_lost": bool(self.lost_input()),
            "lines": sum(f.lines for f in self.files),
            "candidates": sum(f.candidates for f in self.files),
            "events": self.events,
            "near_misses": self.near_misses,
            "time": self.time_notes(),
            "packs": self.packs,
            "files": files,
            "skipped": self.skipped,
            "warnings": self.warnings,
            "executors": self.executors,
        }
