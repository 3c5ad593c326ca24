"""Lint what the simulator wrote against Kafka: templates, levels, loggers and impossible sequences.

``lint(world, rows)`` checks every record of every process:

* a Kafka line's template exists at the process's release, with that level and that logger, and
  the message (after its log-context prefix) is that template filled in;
* a line of another logger does not use a logger Kafka's templates come from (such a line would be
  a Kafka line nobody vouched for);
* nothing is written below the level the process keeps (no DEBUG-only line at INFO);
* sequences Kafka cannot produce: a member revoking or losing partitions it was never assigned, a
  member synced in a generation it did not join, the coordinator counting "0 of which are static"
  while static members are in the group.

``rows`` is the inventory the lines come from (patterns/kafka/templates.jsonl, catalog.inventory_path()).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from .catalog import inventory_path, release

_SLOT = re.compile(r"\{\{\}\}|\{\}")


@dataclass(frozen=True)
class InventoryRow:
    version: str
    level: str
    logger: str
    template: str


def load_rows(path: Path | None = None) -> list[InventoryRow]:
    out = []
    with open(path or inventory_path(), encoding="utf-8") as handle:
        for text in handle:
            if text.strip():
                r = json.loads(text)
                out.append(InventoryRow(r["version"], r["level"], r["logger"], r["template"]))
    return out


class Inventory:
    def __init__(self, rows: list[InventoryRow]):
        self.by_version: dict[str, list[InventoryRow]] = {}
        self.loggers: set[str] = set()
        for row in rows:
            self.by_version.setdefault(row.version, []).append(row)
            self.loggers.add(row.logger)
        self._regex: dict[str, re.Pattern] = {}

    def regex(self, template: str) -> re.Pattern:
        if template not in self._regex:
            parts = _SLOT.split(template)
            slots = _SLOT.findall(template)
            body = re.escape(parts[0])
            for slot, part in zip(slots, parts[1:]):
                body += (r"\{.*\}" if slot == "{{}}" else r".*") + re.escape(part)
            self._regex[template] = re.compile(r"(?:.*?)" + body, re.DOTALL)
        return self._regex[template]

    def matches(self, version: str, level: str, logger: str, message: str) -> bool:
        for row in self.by_version.get(release(version), ()):
            if row.level == level and row.logger == logger and self.regex(row.template).fullmatch(message):
                return True
        return False


def lint(world, inventory: Inventory) -> list[str]:
    problems: list[str] = []
    for log in world.logs:
        for record in log.records:
            where = f"{log.path} t={record.t:.0f}ms"
            if record.key is not None:
                version = record.version or log.version
                if not inventory.matches(version, record.level, record.logger, record.message):
                    problems.append(f"{where}: no {record.level} {record.logger} template at {version} for "
                                    f"{record.message[:160]!r}")
            elif record.logger in inventory.loggers:
                problems.append(f"{where}: {record.logger} is a Kafka logger but the line is not a Kafka template: "
                                f"{record.message[:120]!r}")
            if log.threshold(record.logger) > {"TRACE": 0, "DEBUG": 1, "INFO": 2, "WARN": 3, "ERROR": 4}[record.level]:
                problems.append(f"{where}: {record.level} line in a process logging {record.logger} above it")
        problems += _member_sequences(log)
    problems += _static_counts(world)
    return problems


_JOINED = re.compile(r"Successfully joined group with generation (?:Generation\{generationId=)?(-?\d+)")
_SYNCED = re.compile(r"Successfully synced group in generation Generation\{generationId=(-?\d+)")
_ADDED = re.compile(r"Adding newly assigned partitions: \[?([^\]\n]*)\]?$")
_REVOKED = re.compile(r"(?:Revoke|Lost) previously assigned partitions \[?([^\]\n]*)\]?$")
_PREFIX = re.compile(r"^\[Consumer (?:instanceId=[^,]+, )?clientId=([^,]+), groupId=([^\]]+)\] ")


def _parts(text: str) -> set[str]:
    return {p.strip() for p in text.split(",") if p.strip()}


def _member_sequences(log) -> list[str]:
    """Per consumer (prefix) in one process: revocations of owned partitions only, syncs after joins."""
    problems = []
    owned: dict[str, set[str]] = {}
    joined: dict[str, int] = {}
    for record in sorted(log.records, key=lambda r: (r.t, r.seq)):
        head = _PREFIX.match(record.message)
        if not head:
            continue
        who = head.group(0)
        body = record.message[head.end():]
        if (m := _JOINED.match(body)):
            joined[who] = int(m.group(1))
        elif (m := _SYNCED.match(body)) and joined.get(who) != int(m.group(1)):
            problems.append(f"{log.path} t={record.t:.0f}ms: synced generation {m.group(1)} without joining it")
        elif (m := _ADDED.match(body)):
            owned.setdefault(who, set()).update(_parts(m.group(1)))
        elif (m := _REVOKED.match(body)):
            gone = _parts(m.group(1))
            extra = gone - owned.get(who, set())
            if extra:
                problems.append(f"{log.path} t={record.t:.0f}ms: revokes/loses {sorted(extra)} never assigned")
            owned[who] = owned.get(who, set()) - gone
        elif "Starting" in body:
            owned.pop(who, None)
    return problems


_STATIC_COUNT = re.compile(r"The group has (\d+) members, (\d+) of which are static")


def _static_counts(world) -> list[str]:
    """A coordinator never counts 0 static members while members with a group.instance.id are in the group."""
    problems = []
    static_groups = set()
    for log in world.logs:
        for record in log.records:
            if record.message.startswith("[Consumer instanceId="):
                static_groups.add(_PREFIX.match(record.message).group(2))
    for log in world.logs:
        for record in log.records:
            m = _STATIC_COUNT.search(record.message)
            if not m:
                continue
            group = re.search(r"for group (\S+) for generation", record.message)
            if group and group.group(1) in static_groups and int(m.group(2)) == 0 and int(m.group(1)) > 0:
                problems.append(f"{log.path} t={record.t:.0f}ms: 0 static members in static group {group.group(1)}")
    return problems
