"""A Connect worker forces rebalance after rebalance: its config offset never matches the group assignment's.

Symptom
-------
After every rebalance the same worker reads the config topic to the end, ends where it started,
and forces another rebalance instead of starting its connectors and tasks::

    [2024-03-05 09:00:08,106] INFO [Worker clientId=connect-10.0.28.41:8083, groupId=connect-prod] Current config state offset -1 is behind group assignment 382, reading to end of config log (org.apache.kafka.connect.runtime.distributed.DistributedHerder:1884)
    [2024-03-05 09:00:08,160] INFO [Worker clientId=connect-10.0.28.41:8083, groupId=connect-prod] Finished reading to end of log and updated config snapshot, new config log offset: -1 (org.apache.kafka.connect.runtime.distributed.DistributedHerder:1911)
    [2024-03-05 09:00:08,164] INFO [Worker clientId=connect-10.0.28.41:8083, groupId=connect-prod] Current config state offset -1 does not match group assignment 382. Forcing rebalance. (org.apache.kafka.connect.runtime.distributed.DistributedHerder:1846)
    [2024-03-05 09:00:08,171] INFO [Worker clientId=connect-10.0.28.41:8083, groupId=connect-prod] Rebalance started (org.apache.kafka.connect.runtime.distributed.WorkerCoordinator:243)

repeating with the same two offsets; the worker never logs "Starting connectors and tasks using
config offset". An offset of -1 means the worker has read nothing of the config topic.

Why it happens
--------------
The leader puts the offset of the config topic it has read into every assignment; a worker may
only start the work it is given once it has read the config topic up to that offset. A worker
that is behind reads to the end (normal when it joins, or after a connector was created during the
rebalance) and one that read past it forces a single rebalance whose assignment carries the newer
offset: both converge at the next assignment. A worker whose offset does not move when it reads
to the end cannot converge: it reads another config topic than the leader (a different
``config.storage.topic`` in its worker config under the same ``group.id``), a config topic it has
no read access to, or one with several partitions. It forces a rejoin after every assignment, its
connectors and tasks never start, and every forced rebalance can move the others' work too.

Remediation
-----------
Give every worker of the ``group.id`` the same ``config.storage.topic`` (and the same
``offset.storage.topic`` and ``status.storage.topic``); the config topic must be compacted
(``cleanup.policy=compact``) with a single partition, and readable by every worker's principal
(Read and Describe ACLs). Restart the culprit worker after fixing its worker config. A worker
that catches up (behind, read to the end, then starts) or forces one rebalance after a connector
change is healthy and not reported.

Scope: Kafka Connect distributed workers (every Connect protocol: eager, compatible, sessioned).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..classify import of
from ..timeline.model import Evidence, GroupTimeline
from . import contract, figures
from .finding import Finding, dedupe, window
from .helpers import culprit_of, escalate, names

ID = "connect-config-mismatch"
SEVERITY = "warning"
ROLE = "cause"
PROTOCOLS = ("connect",)


@dataclass(frozen=True)
class Thresholds(contract.Thresholds):
    """thresholds.toml [connect-config-mismatch], typed as thresholds_schema.toml types it."""
    critical_forced: int


def check(group: GroupTimeline, t: Thresholds):
    classification = of(group)
    stuck = classification.connect.stuck
    if not stuck:
        return
    stuck.sort(key=lambda w: (-len(w.stuck), w.worker))
    parts, evidence, offsets = [], [], []
    for i, sync in enumerate(stuck[:3]):
        config, assignment = sync.offsets
        first, last = sync.stuck[0], sync.stuck[-1]
        # the offsets its last forced rebalance states, and how many times it forced one: what its sentence says
        worker = names([sync.worker])
        suffix = f".{worker}" if i else ""          # the first (most forcing) worker's offsets by their plain names
        asked = figures.count(f"forced_rejoins.{worker}", f"rejoins {worker} forced", sync.stuck)
        own = figures.stated(f"config_offset{suffix}", config, figures.OFFSET, "its config state offset (its last forced "
                             "rebalance's line)", sync.mismatches[-1])
        theirs = figures.stated(f"assignment_offset{suffix}", assignment, figures.OFFSET, "the assignment's config offset "
                                "(the same line)", sync.mismatches[-1])
        offsets += [asked, own, theirs]
        text = (f"{names([sync.worker])} asked to rejoin {asked.text()} time(s) ('Forcing rebalance') from "
                f"{first['ts']:%H:%M:%S} to {last['ts']:%H:%M:%S}: after reading the config topic to the end its "
                f"config state offset is {config} against the assignment's {assignment}")
        if sync.read_nothing:
            text += " (-1: it read nothing of the config topic the leader has written to)"
        started = [e for e in sync.started if e["ts"] is not None and e["ts"] >= first["ts"]]
        text += ("; it started its connectors and tasks later." if started else
                 "; it never started its connectors and tasks.")
        parts.append(text)
        behind = [e for e in sync.behind if e["ts"] is not None and e["ts"] <= first["ts"]][-1:]
        evidence += [Evidence.of(e) for e in behind] + [Evidence.of(first)]
        if last is not first:
            evidence.append(Evidence.of(last))
    stuck_ids = {id(e) for sync in stuck for e in sync.stuck}
    workers = [sync.worker for sync in stuck]
    caused = [r.index for r in group.rebalances if any(id(e) in stuck_ids for e in r.events)
              or (r.operation in ("config-mismatch", "enforced") and r.culprit_name in workers)]
    opened = [r.events[0] for r in group.rebalances if r.index in set(caused) and r.events]
    cost = figures.count("rebalances_caused", "rebalances of the group they caused (each one's first line)", opened)
    parts.append(f"It cost {cost.text()} rebalance(s) of the group." if caused else
                 "The coordinator answered its rejoins with the current generation (a follower rejoining a Stable "
                 "group with the same metadata): no rebalance of the group, but its work stays stopped.")
    # What it forced (its own 'Forcing rebalance' lines) and what that cost the group (rebalances) are two figures:
    # a follower rejoining a Stable group with the same metadata costs no rebalance at all.
    forcing = figures.count("forced_rejoins", "rejoins forced by workers whose config offset does not converge",
                            [e for sync in stuck for e in sync.stuck])
    culprit = culprit_of(classification.members, stuck[0].worker)
    label = culprit.label if culprit else stuck[0].worker
    severity = escalate(forcing.value, t["critical_forced"])
    start, end = window(evidence)
    finding = Finding(ID, severity, group.group,
                      f"Connect worker {label} forced {forcing.text()} rejoin(s) ({cost.text()} rebalance(s) of the "
                      "group): its config offset does not reach the assignment's",
                      " ".join(parts), start, end, dedupe(evidence),
                      f"Give every worker of group.id {group.group} the same config.storage.topic (and offset/status "
                      "storage topics); the config topic must be compacted with a single partition and readable by "
                      f"every worker; fix {label}'s worker config or its access, then restart it.",
                      culprit=culprit)
    finding.figures = [forcing, cost] + offsets
    finding.cause = (f"Connect worker {label} cannot read the config topic up to the leader's offset"
                     + (" (it read nothing of it)" if stuck[0].read_nothing else ""))
    finding.caused = {"rebalances": caused, "culprits": workers}
    yield finding
