"""What a caller can set about reading logs (shared by both engines and every command)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from . import timestamps


@dataclass
class ReadOptions:
    tz: str = "UTC"                                       # zone of naive timestamps
    host_tz: dict[str, str] = field(default_factory=dict)  # per-host zone overrides
    host: str | None = None                               # force the host of every input
    layout: str | None = None                             # a layout name or a conversion pattern
    packs: list[Path] = field(default_factory=list)       # extra pack files or directories
    kafka_version: str | None = None                      # pin the Kafka version of every file
    jobs: int = 1
    split_bytes: int = 32 << 20                           # plain files above this are split in ranges
    base_date: str | None = None                          # date for time-of-day-only layouts (YYYY-MM-DD)
    base_date_is_last: bool = False                       # base_date is the date of a file's last line (its mtime)
    exclude: list[str] = field(default_factory=list)      # files never read as input (the run's outputs)
    clusters: dict[str, str] = field(default_factory=dict)  # --cluster NAME=PATH: PATH -> NAME

    def zone_of(self, host: str):
        """The zone naive times of ``host`` are read in (--host-tz, else --tz)."""
        return timestamps.zone(self.host_tz.get(host, self.tz))
