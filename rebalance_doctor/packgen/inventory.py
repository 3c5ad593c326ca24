"""The Kafka log-template inventory (patterns/kafka/templates.jsonl, extracted from the releases'
-sources jars by ``python -m rebalance_doctor.packgen.sources --out patterns/kafka``) as rows."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..core.paths import patterns_dir

VERSIONS = ("2.4.0", "2.8.0", "3.0.0", "3.3.1", "3.6.0", "3.9.0", "4.0.0", "4.1.0", "4.2.0", "4.3.0", "4.3.1", "4.3.2",
            "4.4.0")
COMPONENTS = ("broker", "consumer", "streams", "connect")
REPORTED_LEVELS = ("INFO", "WARN", "ERROR")


@dataclass(frozen=True)
class Row:
    version: str
    component: str
    cls: str
    file: str
    line: int
    level: str
    template: str
    logger: str
    notes: str
    kind: str
    params: tuple[str, ...]
    base_template: str | None = None     # composed rows: the template whose last {} the reason fills
    reason_template: str | None = None
    variant_of: str | None = None        # variant rows: the template whose ternary they spell out

    @property
    def prefix_note(self) -> str:
        return self.notes.split(";", 1)[0].removeprefix("prefix: ")

    @property
    def key(self) -> tuple[str, str, str]:
        """What makes a template distinct for coverage: component, logger and text."""
        return (self.component, self.logger, self.template)


def default_path() -> Path:
    override = os.environ.get("REBALANCE_DOCTOR_TEMPLATES")
    if override:
        return Path(override)
    return patterns_dir() / "kafka" / "templates.jsonl"


def missing() -> str | None:
    """Why the template inventory cannot be read (for the generators' command lines), or None."""
    path = default_path()
    if path.is_file():
        return None
    return (f"the Kafka template inventory {path} is not there: these generators read it (patterns/kafka/, "
            f"made by python -m rebalance_doctor.packgen.sources); set REBALANCE_DOCTOR_TEMPLATES to its path")


def load_rows(path: Path | None = None) -> list[Row]:
    rows = []
    with open(path or default_path(), encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            r = json.loads(line)
            composed = r.get("composed_from") or {}
            rows.append(Row(r["version"], r["component"], r["class"], r["file"], int(r["line"]), r["level"],
                            r["template"], r["logger"], r.get("notes", ""), r.get("kind", "log"),
                            tuple(r.get("params", [])), composed.get("base_template"),
                            composed.get("reason_template"), r.get("variant_of")))
    return rows


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))
