"""The Kafka log lines the simulator may write, resolved per release from Kafka's template inventory.

``lines.toml`` names each line the model can write (``scala.stabilized``,
``consumer.joined``, ...) and lists, newest first, the templates Kafka used for it over the
releases, with the names of the values that fill each ``{}``. For a process of a given
component and release, the first candidate that exists in the inventory at that release (same
component, template text and, when given, class) is the line: its level, logger and log-context
prefix come from the inventory row, never from the simulator. A line with no candidate at a
release is not written at that release, because Kafka does not write it.

The rows are read from the project's own inventory, ``patterns/kafka/templates.jsonl`` (extracted
from the releases' ``-sources`` jars by ``python -m rebalance_doctor.packgen.sources``; shipped in
the wheel with the packs; ``REBALANCE_DOCTOR_TEMPLATES`` names another file), so a line is written
with the wording, level and logger of the release's own source, 2.4 through 4.4.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Mapping

from ..core.toml import load_toml
from ..packgen import javafmt
from ..packgen.inventory import VERSIONS as INVENTORY_VERSIONS, default_path, version_key
from ..packgen.render import fill

# The releases the simulator renders: every release the inventory reads.
VERSIONS = INVENTORY_VERSIONS
RANGE = f"{VERSIONS[0].rsplit('.', 1)[0]}-{VERSIONS[-1].rsplit('.', 1)[0]}"   # 2.4-4.4, for messages

HERE = Path(__file__).parent
CATALOG = HERE / "lines.toml"
# Keys named scala.* are written by the Scala coordinator, java.* by the Java one.
FAMILY_LOGGERS = {"scala": "kafka.", "java": "org.apache.kafka.coordinator."}
LEVELS = {"TRACE": 0, "DEBUG": 1, "INFO": 2, "WARN": 3, "ERROR": 4}


@dataclass(frozen=True)
class Row:
    """One inventory row, as much of it as a written line needs."""

    version: str
    component: str
    cls: str
    level: str
    logger: str
    template: str
    prefix: str        # the notes' prefix kind, e.g. "[Consumer clientId=<client.id>, groupId=<group.id>] "
    line: int


@dataclass(frozen=True)
class Candidate:
    template: str
    args: tuple[str, ...]
    cls: str | None
    since: tuple[int, ...]
    until: tuple[int, ...]


@dataclass(frozen=True)
class Resolved:
    """A line as a given release writes it."""

    key: str
    row: Row
    args: tuple[str, ...]

    def message(self, values: Mapping[str, object]) -> str:
        return fill(self.row.template, [format_value(spec, values) for spec in self.args])


# -- formatting of values, as the source expression in the row's params prints them ----------------
def _join(value: object) -> str:
    return ", ".join(str(v) for v in value) if isinstance(value, (list, tuple, set, frozenset)) else str(value)


FORMATS: dict[str, Callable[[object], str]] = {
    "": javafmt.java,
    "java": javafmt.java,
    "scala": javafmt.scala,
    "join": _join,                                     # Utils.join(collection, ", ")
    "id": lambda g: str(getattr(g, "generation_id", g)),   # Generation.generationId where a row prints the int
    "optional": javafmt.java_optional,
    "option": javafmt.scala_option,
    "scalaset": lambda v: javafmt.scala_set(v),
    "str": str,
}


def format_value(spec: str, values: Mapping[str, object]) -> str:
    name, _, fmt = spec.partition(":")
    if name.startswith("'"):
        return name.strip("'")                          # a literal argument
    if name not in values:
        raise KeyError(f"line needs value {name!r}")
    return FORMATS[fmt](values[name])


# -- loading -------------------------------------------------------------------------------------
def _prefix_kind(notes: str) -> str:
    return notes.split(";", 1)[0].removeprefix("prefix: ").split(" (")[0].strip()


def _range(spec: Mapping, field: str, default: str) -> tuple[int, ...]:
    return version_key(spec.get(field, default))


@lru_cache(maxsize=1)
def catalog() -> dict[str, tuple[str, tuple[Candidate, ...]]]:
    """key -> (component, candidates newest first)."""
    data = load_toml(CATALOG)
    out = {}
    for key, spec in data["line"].items():
        args = tuple(spec.get("args", ()))
        cls = spec.get("class")
        candidates = []
        for item in spec["templates"]:
            if isinstance(item, str):
                item = {"template": item}
            candidates.append(Candidate(item["template"], tuple(item.get("args", args)), item.get("class", cls),
                                        _range(item, "since", VERSIONS[0]), _range(item, "until", VERSIONS[-1])))
        out[key] = (spec["component"], tuple(candidates))
    return out


@lru_cache(maxsize=1)
def _client_reason() -> dict:
    return dict(load_toml(CATALOG)["client_reason"])


def sends_reason(client_version: str) -> bool:
    """Whether a client of this release puts its reason in JoinGroup and LeaveGroup (KIP-800)."""
    return version_key(client_version) >= version_key(_client_reason()["since"])


def quoted_reason(reason: str | None, sent: bool, empty_is_none: bool = True) -> str:
    """What a broker's "client reason: {}" prints for a request: the client's reason, or the
    placeholder when the request carried none (``sent`` False: an older client). A JoinGroup's
    empty reason counts as none too (``empty_is_none``); a LeaveGroup's only a missing one."""
    if not sent or reason is None or (empty_is_none and not reason):
        return _client_reason()["placeholder"]
    return reason


def _row_of(record: dict) -> Row:
    return Row(record["version"], record["component"], record["class"], record["level"], record["logger"],
               record["template"], _prefix_kind(record.get("notes", "")), int(record["line"]))


@lru_cache(maxsize=1)
def _rows() -> dict[tuple[str, str, str], list[Row]]:
    index: dict[tuple[str, str, str], list[Row]] = {}
    with open(inventory_path(), encoding="utf-8") as handle:
        for text in handle:
            if text.strip():
                row = _row_of(json.loads(text))
                index.setdefault((row.version, row.component, row.template), []).append(row)
    return index


def inventory_path() -> Path:
    """The inventory the lines come from (patterns/kafka/templates.jsonl, or REBALANCE_DOCTOR_TEMPLATES)."""
    return default_path()


def release(version: str) -> str:
    """The inventoried release whose wording a version writes (the newest at or below it)."""
    key = version_key(version)          # ValueError when it is not a dotted number
    if len(key) < 2:
        raise ValueError(f"Kafka {version} is not a release number")
    key = (key + (0, 0))[:3]
    if key < version_key(VERSIONS[0]) or key[:2] > version_key(VERSIONS[-1])[:2]:
        raise ValueError(f"Kafka {version} is outside the simulated range {RANGE}")
    return [v for v in VERSIONS if version_key(v) <= key][-1]


@lru_cache(maxsize=None)
def resolve(key: str, version: str, coordinator: str = "consumer") -> Resolved | None:
    """The line ``key`` as a process at ``version`` writes it, or None (not written).

    ``coordinator`` is the component whose AbstractCoordinator writes the "coordinator" lines
    (consumer, or connect for a Connect worker)."""
    try:
        component, candidates = catalog()[key]
    except KeyError:
        raise KeyError(f"no line {key!r} in {CATALOG.name}") from None
    if component == "coordinator":
        component = coordinator
    rel = release(version)
    vkey = version_key(rel)
    rows = _rows()
    for candidate in candidates:
        if not candidate.since <= vkey <= candidate.until:
            continue
        found = rows.get((rel, component, candidate.template), [])
        if candidate.cls:
            found = [r for r in found if r.cls == candidate.cls]
        # the Scala and the Java coordinators share some wordings: the key's family decides
        family = FAMILY_LOGGERS.get(key.split(".", 1)[0])
        if family:
            found = [r for r in found if r.logger.startswith(family)]
        if len(found) > 1:
            raise ValueError(f"{key}: several rows at {rel} for {candidate.template!r}; name the class")
        if found:
            return Resolved(key, found[0], candidate.args)
    return None


def referenced_templates() -> set[tuple[str, str]]:
    """(component, template) of every candidate (the test that each names an inventory row reads them)."""
    out = set()
    for component, candidates in catalog().values():
        for candidate in candidates:
            for comp in ("consumer", "connect", "streams") if component == "coordinator" else (component,):
                out.add((comp, candidate.template))
    return out
