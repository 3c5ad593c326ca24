"""Why each rebalance happened: protocol, operation, verdict and culprit (between timeline and rules).

`classify(timeline)` fills `Rebalance.protocol`, `.operation`, `.verdict`, `.culprit` and
`.cause_index` of every rebalance of a group timeline, and returns the group's `Classification`:
its protocol, its members (host, client, member ids, instance, config, assignors, life) and what
each rebalance changed. Every rule reads this instead of its own heuristics.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..timeline.model import GroupTimeline, Rebalance
from . import connect as connect_module
from . import coordinator as coordinator_module
from . import fencing as fencing_module
from . import members as members_module
from . import migration as migration_module
from . import operations, protocol
from . import static as static_module
from . import sync_errors as sync_errors_module
from . import threads as threads_module
from . import topology as topology_module
from . import unreleased as unreleased_module
from . import warmups as warmups_module
from .coordinator import Coordinator
from .members import Member, Members
from .operations import Change, verdict_of, vocabulary, words
from .protocol import NOT_DIAGNOSED


@dataclass
class Classification:
    protocol: str                                   # the group's protocol (see protocol.py)
    members: Members
    changes: dict[int, Change] = field(default_factory=dict)   # rebalance index -> what it changed
    # Where the group's coordinator was: loads, unloads, members losing and finding it (coordinator.py).
    coordinator: Coordinator = field(default_factory=Coordinator)
    # When static members were away and which removals on session timeout were theirs (static.py).
    static: static_module.Absences = field(default_factory=static_module.Absences)
    # Connect workers' config offsets against the assignments' (connect.py).
    connect: connect_module.ConnectConfig = field(default_factory=connect_module.ConnectConfig)
    # Kafka Streams threads that died, and their replacements (threads.py).
    threads: threads_module.StreamThreads = field(default_factory=threads_module.StreamThreads)
    # KIP-848 members the coordinator fenced (fencing.py).
    fencing: fencing_module.Fencing = field(default_factory=fencing_module.Fencing)
    # SyncGroup failures that are errors of the SyncGroup itself (sync_errors.py).
    sync_errors: sync_errors_module.SyncErrors = field(default_factory=sync_errors_module.SyncErrors)
    # Kafka Streams warmup replicas and their lags, decision after decision of the task assignor (warmups.py).
    warmups: warmups_module.Warmups = field(default_factory=warmups_module.Warmups)
    # Classic <-> consumer protocol migration: conversions, and members of the other protocol refused (migration.py).
    migration: migration_module.Migration = field(default_factory=migration_module.Migration)
    # KIP-848 static members refused UNRELEASED_INSTANCE_ID (unreleased.py).
    unreleased: unreleased_module.Unreleased = field(default_factory=unreleased_module.Unreleased)
    # KIP-1071 streams groups whose topology is not ready: source or internal topics missing (topology.py).
    topology: topology_module.Topology = field(default_factory=topology_module.Topology)

    def coordinator_loaded_before(self, ts):
        """The last time the coordinator loaded the group before ts (a move), if any."""
        return self.coordinator.loaded_before(ts)

    @property
    def diagnosed(self) -> bool:
        """Whether the rules judge this group (every protocol the classification models; see protocol.NOT_DIAGNOSED)."""
        return self.protocol not in NOT_DIAGNOSED

    def expected(self, rebalances: list[Rebalance]) -> list[Rebalance]:
        return [r for r in rebalances if r.verdict == "expected"]

    def harmful(self, rebalances: list[Rebalance]) -> list[Rebalance]:
        return [r for r in rebalances if r.verdict == "harmful"]


def classify(timeline: GroupTimeline, probing: dict | None = None) -> Classification:
    """`probing`: the probing-rebalance-cadence thresholds (`caught_up_lag`, `probes_without_progress`) the
    analysis runs with; the probing rebalances of a stall they define are harmful (None: not judged)."""
    members = members_module.collect(timeline, timeline.context)
    absences = static_module.resolve(timeline, members)
    group_protocol, per_rebalance = protocol.detect(timeline)
    for r in timeline.rebalances:
        r.protocol = per_rebalance.get(r.index, group_protocol)
    result = Classification(group_protocol, members)
    result.coordinator = coordinator_module.read(timeline, members)
    result.static = absences
    result.connect = connect_module.read(timeline)
    result.threads = threads_module.read(timeline)
    members.died(timeline, result.threads.deaths)
    result.fencing = fencing_module.read(timeline, group_protocol)
    result.sync_errors = sync_errors_module.read(timeline)
    result.warmups = warmups_module.read(timeline)
    result.migration = migration_module.read(timeline, group_protocol)
    result.unreleased = unreleased_module.read(timeline)
    result.topology = topology_module.read(timeline)
    if result.diagnosed:
        result.changes = operations.classify_rebalances(timeline, members, result.coordinator, absences,
                                                        result.connect)
        _config_mismatch_verdicts(timeline, result.connect)
        # A generation whose assignment the coordinator could not store never took effect (its members get an error
        # instead of their assignment and rejoin): its rebalance is a failed attempt, whatever began it.
        unstored = {f.generation for f in result.sync_errors.failures
                    if f.error.startswith(sync_errors_module.STORE) and f.generation is not None}
        for r in timeline.rebalances:
            if r.generation in unstored:
                r.operation, r.verdict = "failed-attempt", "harmful"
            if r.trigger_kind == "sync-error" and r.verdict == "inherit":
                r.verdict = "harmful"      # the coordinator could not store the assignment: no generation completed
        if probing:
            _stalled_probes(timeline, result.warmups, probing)
    else:
        for r in timeline.rebalances:
            r.operation, r.verdict = "unknown", "unknown"
    timeline.classification = result
    return result


def _config_mismatch_verdicts(timeline: GroupTimeline, connect: connect_module.ConnectConfig) -> None:
    """A rebalance a Connect worker forced is harmful when the worker cannot converge (connect.py), else the
    expected catch-up after a config change."""
    stuck = {id(e) for sync in connect.stuck for e in sync.stuck}
    for r in timeline.rebalances:
        if r.operation == "config-mismatch":
            r.verdict = "harmful" if any(id(e) in stuck for e in r.events) else "expected"


def _stalled_probes(timeline: GroupTimeline, warmups: warmups_module.Warmups, probing: dict) -> None:
    """A Streams probing rebalance is expected while the warmups it probes make progress; the probes of a stall
    (consecutive decisions over which the same warmups got no closer: warmups.py, the same stretches
    probing-rebalance-cadence reports) are harmful: probing that does not converge."""
    stalled = {d.rebalance for stall in warmups.stalls(int(probing["caught_up_lag"]),
                                                       int(probing["probes_without_progress"]))
               for d in stall.decisions}
    for r in timeline.rebalances:
        if r.index in stalled and r.operation == "probing-followup":
            r.verdict = "harmful"


def of(timeline: GroupTimeline) -> Classification:
    """The timeline's classification (computed on first use)."""
    found = timeline.classification
    return found if isinstance(found, Classification) else classify(timeline)


__all__ = ["Change", "Classification", "Coordinator", "Member", "Members", "NOT_DIAGNOSED", "classify", "of", "verdict_of",
           "vocabulary", "words"]
