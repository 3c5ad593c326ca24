"""KIP-1071 streams groups whose topology is not ready: the topics it needs are missing, so no task is assigned.

The coordinator of a streams group (``group.protocol=streams``) checks the topology the members sent against
the cluster's topics ("[GroupId g][MemberId m] Configuring the topology E") and says how that went:
"Valid topic configuration found in Nms, topology epoch E is now initialized." (ready: tasks can be assigned),
"Valid topic configuration found in Nms, but internal topics are missing for topology epoch E: T"
(MISSING_INTERNAL_TOPICS: it asks for the repartition and changelog topics to be created) or "Topic
configuration failed for topology epoch E in Nms: Source topics T are missing." (MISSING_SOURCE_TOPICS; also
topics that must be co-partitioned and are not). Until a topology is initialized the members are given no
task. Each member logs the statuses of every heartbeat answer ("Membership is in the following statuses: (3)
Internal topics are missing: T; Creation failed: T (reason)."), the codes of KIP-1071's
StreamsGroupHeartbeatResponse: 1 source topics missing, 2 topics incorrectly partitioned, 3 internal topics
missing, 5 assignment delayed (``group.streams.initial.rebalance.delay.ms``, not a fault). A StreamThread
told its source topics are missing waits twice the heartbeat interval, then gives up ("Missing source topics:
T. Timeout exceeded after Nms.", MissingSourceTopicException) and its uncaught exception handler decides what
follows (SHUTDOWN_CLIENT unless the application says otherwise).

A group's start always goes through MISSING_INTERNAL_TOPICS once (the topics are created on the first
heartbeat that needs them), and two members asking at once make one creation fail with "already exists":
neither is a fault. The topology is stuck when it was reported not ready since it was last initialized and
no member was given a task after that; the lines say why when a creation failed for another reason (a
replication factor above the brokers' count, a policy, an ACL) or source topics are missing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import regex

from ..timeline.model import GroupTimeline
from ..core import eventnames as EV

# The inventory packs' patterns (ids are never reused; their captures are the lines' fields).
_INITIALIZED = "broker.internal_topic_manager.groupid_memberid_valid_topic_configuration_found_2"
_MISSING_INTERNAL = "broker.internal_topic_manager.groupid_memberid_valid_topic_configuration_found"
_FAILED = "broker.internal_topic_manager.groupid_memberid_topic_configuration_failed_for"
_STATUSES = "streams.streams_group_heartbeat_request_manager.membership_is_in_the_following_statuses"
# "Missing source topics: T. Timeout exceeded after Nms." (StreamThread, 4.2+): the thread throws
# MissingSourceTopicException and its uncaught exception handler decides what follows (SHUTDOWN_CLIENT by default).
_GAVE_UP = "streams.stream_thread.missing_source_topics_timeout_exceeded_after"
SOURCE, PARTITIONED, INTERNAL, DELAYED = 1, 2, 3, 5
NOT_READY = (SOURCE, PARTITIONED, INTERNAL)
# One status of the joined list "(code) detail, (code) detail"; a detail may hold ", " (a list of topics).
_STATUS = regex.compile(r"\((?P<code>\d+)\) (?P<detail>.*?)(?=, \(\d+\) |$)")
_CREATION = regex.compile(r"Creation failed: (?P<topics>.*?) \((?P<reason>.*)\)\.?$")
_RACE = "already exists"
_SOURCE_TOPICS = regex.compile(r"Source topics (?P<topics>.*?) are missing")
# A member's assignment with its tasks: the coordinator's "Member's new assignment state" and the member's own
# "Handle new assignment with ... New active tasks: [...]".
_ASSIGNED = (EV.MEMBER_ASSIGNMENT, EV.ASSIGNMENT_RECEIVED)


@dataclass
class Report:
    """One line saying the topology is not ready: the coordinator's configuration outcome or a member's statuses."""

    event: dict
    code: int                       # SOURCE, PARTITIONED or INTERNAL
    topics: str = ""                # the topics named missing (as the line summarizes them)
    failure: str = ""               # why creating them failed, when the line says it
    # A creation refused for its replication factor (the pattern captures them): the factor asked for and the
    # brokers registered, as the failure states them ("replication factor of 3 cannot be reached because only 1
    # broker(s) are registered").
    replication_factor: int | None = None
    brokers_registered: int | None = None


@dataclass
class Topology:
    reports: list[Report] = field(default_factory=list)      # every not-ready line, in time order
    ready: list[dict] = field(default_factory=list)          # "topology epoch E is now initialized"
    assigned: list[dict] = field(default_factory=list)       # a member given tasks (the coordinator's or its own line)
    gave_up: list[dict] = field(default_factory=list)        # StreamThreads that gave up waiting for source topics

    @property
    def failures(self) -> list[Report]:
        """Reports naming why the topics cannot be had: a creation that failed (not a race) or source topics missing."""
        return [r for r in self.reports if r.failure or r.code in (SOURCE, PARTITIONED)]

    @property
    def episode(self) -> list[Report]:
        """The reports since the topology was last ready (all of them when it never was)."""
        since = self.ready[-1]["ts"] if self.ready else None
        return [r for r in self.reports if since is None or r.event["ts"] > since]

    @property
    def stuck(self) -> bool:
        """The topology is not ready at the end of the logs: reported not ready since it was last initialized, and
        no task assigned to any member after the first such report. (A heartbeat answered just before the
        coordinator initialized the topology still says it is not ready; the tasks that follow say it was.)"""
        episode = self.episode
        if not episode:
            return False
        began = episode[0].event["ts"]
        return not any(e["ts"] >= began for e in self.assigned)


def read(timeline: GroupTimeline) -> Topology:
    found = Topology()
    for e in timeline.events:
        pattern = e.get("pattern")
        attrs = e.get("attrs") or {}
        if e["event"] in _ASSIGNED and e.get("tasks"):
            found.assigned.append(e)
        elif pattern == _GAVE_UP:
            found.gave_up.append(e)
        elif pattern == _INITIALIZED:
            found.ready.append(e)
        elif pattern == _MISSING_INTERNAL:
            found.reports.append(Report(e, INTERNAL, attrs.get("internal_topics_to_create_key_set") or ""))
        elif pattern == _FAILED:
            error = attrs.get("error") or e.get("error") or ""
            source = _SOURCE_TOPICS.search(error)
            found.reports.append(Report(e, SOURCE, source["topics"]) if source else Report(e, PARTITIONED, error))
        elif pattern == _STATUSES:
            for m in _STATUS.finditer(attrs.get("string_statuses_to_log") or ""):
                code = int(m["code"])
                if code not in NOT_READY:
                    continue
                detail = m["detail"]
                topics, _, rest = detail.partition("; ")
                creation = _CREATION.search(rest) if rest else None
                failure = creation["reason"] if creation and _RACE not in creation["reason"] else ""
                source = _SOURCE_TOPICS.search(topics) if code == SOURCE else None
                asked, brokers = attrs.get("replication_factor"), attrs.get("brokers_registered")
                found.reports.append(Report(e, code, source["topics"] if source else topics.split(": ", 1)[-1],
                                            failure, int(asked) if failure and asked else None,
                                            int(brokers) if failure and brokers else None))
    found.reports.sort(key=lambda r: r.event["ts"])
    return found
