"""Rebalances caused by version probing during a rolling upgrade of a Streams application.

Symptom
-------
::

    [2024-06-01 09:00:02,180] INFO stream-thread [inventory-9a2b...-StreamThread-1-consumer] Requested to schedule immediate rebalance due to version probing. (org.apache.kafka.streams.processor.internals.StreamsPartitionAssignor)

Why it happens
--------------
When the members of a Streams application speak different subscription versions (a rolling
upgrade or downgrade), the assignor makes everyone use the lowest common version and triggers a
followup once the last member is upgraded. These rebalances are expected during an upgrade and
should stop with it.

Remediation
-----------
Nothing, if an upgrade was in progress. If they continue after it, some instance still runs the
old version (check ``Kafka version:`` lines per host), or ``upgrade.from`` is still set.

During a rolling upgrade this is part of the healthy operation: an info note after the
healthy-operation note, never a warning.

Scope: Kafka Streams (classic protocol).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..timeline.model import GroupTimeline
from . import contract, figures
from .finding import Finding, dedupe, window
from ..core import eventnames as EV

ID = "version-probing"
SEVERITY = "info"
ROLE = "expected"
PROTOCOLS = ("streams",)


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """None: the rule reads protocol semantics only (thresholds.toml [version-probing] is empty)."""


def check(group: GroupTimeline, t: Thresholds):
    lines = group.of(EV.STREAMS_FOLLOWUP_VERSION_PROBING)
    if not lines:
        return
    rebalances = [r for r in group.rebalances if r.followup == "version_probing"]
    # the releases the instances announced: "Kafka version: X" (AppInfoParser) or "Kafka Streams version: X"
    started = group.of(EV.CLIENT_VERSION) + [e for e in group.context if e["event"] == EV.CLIENT_VERSION] + [
        e for e in group.of(EV.STREAMS_KAFKA_STREAMS) if (e.get("attrs") or {}).get("version")]
    versions = sorted({(e.get("attrs") or {}).get("version") or e.get("kafka_version") for e in started} - {None},
                      key=_release)
    from ..timeline.model import Evidence

    evidence = [Evidence.of(e) for e in lines]
    start, end = window(evidence)
    probes = figures.count("lines", "version-probing lines", lines)
    caused = figures.rebalances("rebalances", "rebalances from version probing", rebalances)
    finding = Finding(ID, "info", group.group, f"{(caused if rebalances else probes).text()} rebalance(s) from version "
                      "probing",
                  f"{probes.text()} version-probing line(s): the members spoke different subscription versions "
                  f"(a rolling upgrade)" + (f"; Kafka versions seen: {', '.join(versions)}" if versions else "") + ".",
                  start, end, dedupe(evidence),
                  "Expected during a rolling upgrade. If it continues afterwards, an instance still runs the old "
                  "version or upgrade.from is still set.")
    finding.figures = [probes, caused]
    finding.caused = {"rebalances": [r.index for r in group.rebalances if r.operation == "version-probing"],
                      "culprits": []}
    yield finding


def _release(version: str) -> tuple:
    return tuple(int(part) if part.isdigit() else 0 for part in version.replace("-", ".").split("."))
