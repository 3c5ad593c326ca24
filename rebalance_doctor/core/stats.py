"""The accounting of a run: what was read, what was found, and everything skipped with a reason."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

NEAR_MISS_SAMPLES = 200  # per file; every near miss is counted, the first ones are kept


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
    problems: list[str] = field(default_factory=list)   # partial reads, huge lines, ...
    near_miss_samples: list[NearMiss] = field(default_factory=list)

    def merge(self, other: "FileStats") -> None:
        """Fold the stats of another byte range of the same file into this one."""
        for name in ("bytes", "lines", "candidates", "events", "near_misses", "non_utf8_records",
                     "untimed_events"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.problems.extend(other.problems)
        room = NEAR_MISS_SAMPLES - len(self.near_miss_samples)
        self.near_miss_samples.extend(other.near_miss_samples[:max(room, 0)])
        # Ranges come in file order: the last one knows the version the file stated last (as one
        # pass over the file would end up with).
        self.kafka_version = other.kafka_version or self.kafka_version


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

    def skip(self, source: str, reason: str) -> None:
        self.skipped.append({"source": source, "reason": reason})

    def warn(self, source: str, message: str) -> None:
        self.warnings.append({"source": source, "message": message})

    def to_dict(self) -> dict:
        files = []
        for f in self.files:
            entry = asdict(f)
            entry.pop("near_miss_samples")
            files.append(entry)
        return {
            "inputs": self.inputs,
            "engine": self.engine,
            "jobs": self.jobs,
            "seconds": round(self.seconds, 3),
            "files_read": self.files_read,
            "bytes": self.bytes,
            "lines": sum(f.lines for f in self.files),
            "candidates": sum(f.candidates for f in self.files),
            "events": self.events,
            "near_misses": self.near_misses,
            "packs": self.packs,
            "files": files,
            "skipped": self.skipped,
            "warnings": self.warnings,
            "executors": self.executors,
        }
