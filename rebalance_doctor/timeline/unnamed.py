"""Client lines whose group no line of their own log names: the group the coordinator names for them.

At its default log level librdkafka names its handle (``rdkafka#consumer-1``: ``<client.id>#consumer-<n>``),
never its group (``%4|...|MAXPOLL|rdkafka#consumer-1| ... leaving group``, ``SESSTMOUT``); KafkaJS and
others are alike. ``core.handles`` gives such a line the group another line of the same handle states;
when none does, the line still belongs to a group, and the coordinator's log names it: a classic member
id is ``<client.id>-<UUID>`` (``rdkafka-5941e992-...``), so the coordinator's lines say which groups
have members of that client.id, and when.

A client line stating its own member id takes the group whose coordinator names that member id (a classic
member id is unique: its client.id and a UUID the coordinator made). A handle's ungrouped lines take the group
the coordinator names for its client.id:

- the only group in the logs with a member of that client.id while the handle wrote them (the member's
  span: its first line at the coordinator to its removal; a member whose first line is its removal was
  there since before the logs began, one never removed is there until they end);
- else (a client.id in several groups at once, such as librdkafka's default ``rdkafka``) the only one of
  them whose coordinator removed a member of that client.id when the handle's own line says it was
  leaving or had lost its membership: a ``leaving group`` at that moment, a session that timed out
  (``SESSTMOUT``: no successful response for ``delay_ms``) within the time the line says it had been
  without an answer;
- else none: the lines stay without a group (reported per process, ``classify.handles``), rather
  than be guessed into one.

Times compare with ``ALLOWANCE_MS`` either side: the clocks of two hosts and the moments a client and
the coordinator log the same request differ by that much (the timeline corrects skew later, per group).
A line that states a group is never changed; the lines filled say so (``attrs.group_from = "coordinator"``).

Lines no coordinator names a group for are still one group's: ``gather`` finds which processes share one
(``process_groups``) and names it by what is known: "consumers of orders on app-1, app-2, app-3 (group name not in
the logs)". A process is one log file at one host. Two processes are in one group when they consume a topic in
common (the topics of the partitions their lines name, the application's own assignment callbacks included) and
never held one partition at the same time: within one group a partition has one owner, while two groups that read
the same topic each hold all of it. A process fitting so exactly one group the logs name (the processes whose lines
name only it) is that group's. A process whose lines name no topic joins the one group of its library and
client.id, else its lines stay its process's: nothing shows a group (``classify.handles`` diagnoses them). The application's own lines take the group the other lines of their
process name, when those name exactly one (``attrs.group_from = "process"``).

A member the coordinator removed (its session expired: fenced) that joins again under the same member id (a KIP-848
member keeps its id) is a process that did not know it was out: its callbacks still held its partitions while the
coordinator had given them to the others, and it gave them up as it learned so and rejoined. So two processes that
held one partition at once are still one group's when the coordinator removed a member before the later one was
given it and the earlier one gave it up as that member joined again; and that earlier process is the member
(``rejoins``, ``_ties``): when exactly one process of a group made up from the processes gave a partition up so, its
lines take that member id (``attrs.member_from = "coordinator"``), and the group made up from its processes is the
coordinator's group the member is in (``attrs.group_from = "coordinator"``). A KIP-848 member id names no client, so
this coincidence is all that ties the coordinator's removal to a host when the client names no group (librdkafka,
KafkaJS at their default levels).

The same pairing names the member: a client line saying its member leaves or lost its session, naming no member
id (librdkafka's MAXPOLL and SESSTMOUT), is about the one member of its client.id the coordinator removed then
(``attrs.member_from = "coordinator"``); with two or more such removals it names none. Without it the
client's line and the coordinator's removal read as two members (one removed twice, never linked to its host).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from . import identity
from ..core import eventnames as EV

ALLOWANCE_MS = 2_000
_DEPARTURES = (EV.MEMBER_LEAVE, EV.MEMBER_EXPIRED, EV.MEMBER_FENCED)
# A client line that says its member is leaving or has lost its membership now.
_LEAVING = (EV.POLL_TIMEOUT, EV.LEAVE_REQUEST, EV.SESSION_TIMEOUT, EV.MEMBER_FENCED)


def client_id(handle: str | None) -> str | None:
    """The client.id of a client line's handle: librdkafka's ``<client.id>#<type>-<n>``, else the name itself."""
    if not handle:
        return None
    head, sep, _ = handle.rpartition("#")
    return head if sep and head else handle


def link(events: list[dict]) -> int:
    """Fill ``group`` of the client lines whose handle names none from the coordinator's lines, in place;
    return how many were filled."""
    spans = member_spans(events)
    if not spans:
        return 0
    handles: dict[tuple, list[dict]] = {}
    for e in events:
        if e.get("library") and not e.get("group") and e.get("component") != "broker":
            cid = client_id(e.get("client"))
            if cid:
                handles.setdefault((e.get("source"), e.get("client")), []).append(e)
    filled = _by_member_id(events, spans)
    for (_, handle), rows in handles.items():
        group = _group_of(client_id(handle), rows, spans)
        if group is None:
            continue
        for e in rows:
            e["group"] = group
            say(e, "group_from")
            filled += 1
    _members(events, spans)
    return filled


def _by_member_id(events: list[dict], spans: _Spans) -> int:
    """A client line stating its own member id (sarama's ``consumergroup/session/<member id>/<generation> released``)
    is in the group whose coordinator names that member id: a classic member id is its client.id and a UUID the
    coordinator made, so it is one member of one group. Returns how many lines were filled."""
    groups: dict[str, set[str]] = {}
    for group, by_client in spans.items():
        for members in by_client.values():
            for span in members:
                groups.setdefault(span[0], set()).add(group)
    filled = 0
    for e in events:
        if e.get("library") and not e.get("group") and e.get("member") and e.get("component") != "broker":
            found = groups.get(e["member"], ())
            if len(found) == 1:
                e["group"] = next(iter(found))
                say(e, "group_from")
                filled += 1
    return filled


def assign(events: list[dict], group: str) -> int:
    """Give ``group`` (the one group the user named: ``analyze --group NAME``) to the client lines that still name
    none after ``link``, in place; return how many. The user knows what the logs do not say; the lines filled say
    so (``attrs.group_from = "user"``). The application's own lines are the group's too."""
    filled = 0
    for e in events:
        if (e.get("library") or is_application(e)) and not e.get("group") \
                and e.get("component") != "broker":
            e["group"] = group
            say(e, "group_from", "user")
            filled += 1
    return filled


UNNAMED = "(group name not in the logs)"


def gather(events: list[dict]) -> int:
    """Give every client or application line still naming no group (after ``link``) a group: the one its process's
    other lines name, else one found from what the processes share (see the module's doc); return how many."""
    by_process: dict[tuple, list[dict]] = {}
    every: dict[tuple, list[dict]] = {}     # all of a process's client and application lines
    named: dict[tuple, set[str]] = {}
    handles: dict[tuple, set[str]] = {}
    applications: list[dict] = []
    for e in events:
        if e.get("component") == "broker":
            continue
        key = (e.get("host") or "", e.get("source") or "")
        if e.get("library") and e.get("client"):
            handles.setdefault(key, set()).add(e["client"])
        elif is_application(e) and not e.get("client"):
            applications.append(e)
        if e.get("library") or is_application(e):
            every.setdefault(key, []).append(e)
        if e.get("group"):
            named.setdefault(key, set()).add(e["group"])
        elif e.get("library") or is_application(e):
            by_process.setdefault(key, []).append(e)
    for e in applications:
        # The application's callback is its consumer's: the one client handle of its process, when there is one.
        mine = handles.get((e.get("host") or "", e.get("source") or ""), ())
        if len(mine) == 1:
            e["client"] = next(iter(mine))
            say(e, "client_from", "process")
    filled = 0
    unnamed: dict[tuple, list[dict]] = {}
    for key, rows in by_process.items():
        groups = named.get(key, set())
        if len(groups) == 1:
            group = next(iter(groups))
            for e in rows:
                e["group"] = group
                say(e, "group_from", "process")
            filled += len(rows)
        elif not groups:
            unnamed[key] = rows
    known: dict[str, list[tuple]] = {}      # a named group -> its processes (those naming only it)
    for key, groups in named.items():
        if len(groups) == 1:
            known.setdefault(next(iter(groups)), []).append(key)
    # With a coordinator's log in the input, a group made up from the processes is one of the groups it names that
    # the lines could not be tied to: its lines say so, and nothing is concluded from their silences
    # (classify.silent): the coordinator's own group states what happened.
    coordinated = any(e.get("component") == "broker" for e in events)
    back = rejoins(events)
    clusters = process_groups(unnamed, {g: {k: every[k] for k in keys if k in every} for g, keys in known.items()},
                              back)
    tied = _ties(clusters, unnamed, back)
    for name, keys in clusters.items():
        groups = {group for key in keys for group, _ in tied.get(key, ())}
        coordinator = next(iter(groups)) if len(groups) == 1 and name.endswith(UNNAMED) else None
        for key in keys:
            members = {member for _, member in tied.get(key, ())}
            for e in unnamed[key]:
                e["group"] = coordinator or name
                say(e, "group_from", "coordinator" if coordinator else "processes")
                if coordinated and not coordinator and name.endswith(UNNAMED):
                    say(e, "coordinator", "elsewhere")
                if len(members) == 1 and not e.get("member"):
                    e["member"] = next(iter(members))
                    say(e, "member_from")
                filled += 1
    return filled


# A removal by the coordinator of a member that joined again under the same member id: (group, member id, removed,
# joined again).
Rejoin = tuple[str, str, datetime, datetime]


def rejoins(events: list[dict]) -> list[Rejoin]:
    """The coordinator's removals of a member that joined again under its member id (a KIP-848 member keeps it; a
    classic one is given a new one), each with the time of that join."""
    removed: dict[tuple[str, str], list[datetime]] = {}
    out: list[Rejoin] = []
    for e in events:
        member, group = e.get("member"), e.get("group")
        if e.get("component") != "broker" or not member or not group or e.get("ts") is None:
            continue
        if identity.client_of_member(member) != member:
            continue        # a classic member id: it never comes back under the same id
        if e["event"] in (EV.MEMBER_EXPIRED, EV.MEMBER_FENCED):
            removed.setdefault((group, member), []).append(e["ts"])
        elif e["event"] == EV.MEMBER_JOIN and removed.get((group, member)):
            out.extend((group, member, at, e["ts"]) for at in removed.pop((group, member)))
    return out


def _unaware(span: tuple, other_from: datetime, rejoin: Rejoin) -> bool:
    """A process held a partition (``span``: from, until) past the coordinator's removal of ``rejoin``'s member,
    another process was given it after that removal, and the first gave it up as the member joined again: it was that
    member, out of the group without knowing (a process paused past its session), not a member of another group."""
    allowance = timedelta(milliseconds=ALLOWANCE_MS)
    held_from, held_until = span[0], span[1]
    _, _, removed, joined = rejoin
    return held_until is not None and held_from < removed and removed - allowance <= other_from <= held_until \
        and abs(held_until - joined) <= allowance


def _ties(clusters: dict[str, list[tuple]], rows: dict[tuple, list[dict]],
          back: list[Rejoin]) -> dict[tuple, set[tuple[str, str]]]:
    """process -> {(group, member id)}: the one process of a group made up from the processes that gave a
    partition up as a removed member joined again (``_unaware``), for each such member."""
    if not back:
        return {}
    evidence = {key: _Evidence.of(rows[key]) for keys in clusters.values() for key in keys}
    out: dict[tuple, set[tuple[str, str]]] = {}
    for rejoin in back:
        found = []
        for name, keys in clusters.items():
            if not name.endswith(UNNAMED):
                continue
            for key in keys:
                if any(_unaware(span, given[0], rejoin) for p, spans in evidence[key].held.items() for span in spans
                       for k in keys if k != key for given in evidence[k].held.get(p, ())):
                    found.append(key)
        if len(found) == 1:
            out.setdefault(found[0], set()).add(rejoin[:2])
    return out


def is_application(event: dict) -> bool:
    """The application's own line (its rebalance callback), or a framework's naming no group (spring-kafka's
    ``null: partitions assigned: [...]``)."""
    return event.get("component") == "application" or (
        not event.get("library") and event["event"] in (EV.PARTITIONS_ASSIGNED, EV.PARTITIONS_REVOKED, EV.PARTITIONS_LOST)
        # the Java client's own ConsumerCoordinator lines are Kafka's, not the application's: they carry its
        # log-context prefix (the client.id), whatever the layout prints of the logger
        and not event.get("client") and not (event.get("logger") or "").startswith(("org.apache.kafka.", "kafka.")))


def process_groups(processes: dict[tuple, list[dict]],
                   known: dict[str, dict[tuple, list[dict]]] | None = None,
                   back: list[Rejoin] = ()) -> dict[str, list[tuple]]:
    """The groups of processes (host, source) whose lines name none, each under the name that says what is known.
    ``known``: the processes of each group the logs name (their lines): a process fitting exactly one of those
    groups (a topic in common, no partition held at the same time as one of its processes) is that group's.
    ``back``: the coordinator's removals of members that joined again (``rejoins``): a removed member's process
    held its partitions, unaware, while the others were given them."""
    evidence = {key: _Evidence.of(rows, back) for key, rows in processes.items()}
    seeds = {group: [_Evidence.of(rows) for rows in members.values()] for group, members in (known or {}).items()}
    clusters: list[list[tuple]] = []
    joined: dict[str, list[tuple]] = {}
    for key in sorted(processes, key=lambda k: (not evidence[k].topics, k)):
        mine = evidence[key]
        fits = [g for g, others in seeds.items() if mine.topics
                and any(mine.topics & o.topics for o in others) and not any(mine.overlaps(o) for o in others)]
        if len(fits) == 1:
            joined.setdefault(fits[0], []).append(key)
            seeds[fits[0]].append(mine)
            continue
        home = None
        if mine.topics:
            home = next((c for c in clusters if any(mine.topics & evidence[k].topics for k in c)
                         and not any(mine.overlaps(evidence[k]) for k in c)), None)
        elif mine.clients:
            same = [c for c in clusters if any(evidence[k].clients & mine.clients for k in c)]
            home = same[0] if len(same) == 1 else None
        if home is None and not mine.topics:
            continue            # nothing shows its group: its lines stay its process's (classify.handles)
        if home is None:
            clusters.append([key])
        else:
            home.append(key)
    named: dict[str, list[tuple]] = dict(joined)
    for cluster in clusters:
        name = _name(cluster, [evidence[k] for k in cluster])
        while name in named:
            name = name.replace(UNNAMED, f"{UNNAMED[:-1]}, another)")
        named[name] = cluster
    return named


class _Evidence:
    """What one process's lines show of its group: topics, library client.ids, and when it held which partition."""

    def __init__(self, back: list[Rejoin] = ()) -> None:
        self.back = back                          # the coordinator's removals of members that joined again
        self.topics: set[str] = set()
        self.clients: set[tuple[str, str]] = set()
        self.held: dict[str, list[list]] = {}     # partition -> [[from, until or None, after a revocation], ...]
        self.last = None                          # the time of its last line

    @classmethod
    def of(cls, rows: list[dict], back: list[Rejoin] = ()) -> _Evidence:
        mine = cls(back)
        last = None                 # the time of the process's previous line
        revoked = True              # it gave partitions back since its last assignment
        assigned = False            # it had an assignment before
        for e in rows:
            cid = client_id(e.get("client"))
            if e.get("library") and cid:
                mine.clients.add((e["library"], cid))
            partitions = e.get("partitions") or ()
            mine.topics.update(p.rpartition("-")[0] for p in partitions if p.rpartition("-")[2].isdigit())
            if e.get("ts") is None:
                continue
            if e["event"] in (EV.PARTITIONS_ASSIGNED, EV.ASSIGNMENT_RECEIVED):
                if not revoked and last is not None:
                    # A consumer's revocation callback runs before every new assignment of its process's life
                    # (or, cooperative, the assignment only adds): an assignment with none between is a new life,
                    # and what the last one held is known held only until its last line.
                    mine._release(list(mine.held), last)
                rebalanced = revoked and assigned       # given after giving back: its group rebalanced
                revoked, assigned = False, True
                for p in partitions:
                    spans = mine.held.setdefault(p, [])
                    if not spans or spans[-1][1] is not None:
                        spans.append([e["ts"], None, rebalanced])
            elif e["event"] in (EV.PARTITIONS_REVOKED, EV.PARTITIONS_LOST):
                mine._release(partitions, e["ts"])
                revoked = True
            elif e["event"] in _LEAVING and e.get("library"):
                # Its membership ended when the client left or lost it (a session lost delay_ms after the last
                # answer), though the application's revocation callback runs only at its next poll.
                since = timedelta(milliseconds=int(e.get("delay_ms") or 0)) if e["event"] == EV.SESSION_TIMEOUT \
                    else timedelta(0)
                mine._release(list(mine.held), e["ts"] - since)
                revoked = True
            last = e["ts"]
        mine.last = last
        return mine

    def _release(self, partitions, at: datetime) -> None:
        for p in partitions:
            spans = self.held.get(p)
            if spans and spans[-1][1] is None:
                spans[-1][1] = max(at, spans[-1][0])

    def overlaps(self, other: _Evidence) -> bool:
        """Both held one partition at once (beyond the clocks' allowance): not one group's members. A partition a
        process never gave back is known held until its last line only: one that another process took after that,
        in an assignment following its own revocation (its group rebalanced), was the silent one's no more (a
        process killed writes nothing; its group gives its partitions to the others)."""
        allowance = timedelta(milliseconds=ALLOWANCE_MS)
        for partition, spans in self.held.items():
            for a_from, a_until, a_after in spans:
                for b_from, b_until, b_after in other.held.get(partition, ()):
                    if a_until is None and b_after and self.last is not None and b_from > self.last + allowance:
                        continue
                    if b_until is None and a_after and other.last is not None and a_from > other.last + allowance:
                        continue
                    if (a_until is None or a_until - allowance > b_from) and \
                            (b_until is None or b_until - allowance > a_from) and \
                            not any(_unaware((a_from, a_until), b_from, r) or _unaware((b_from, b_until), a_from, r)
                                    for r in self.back):
                        return True
        return False


def _name(cluster: list[tuple], evidence: list[_Evidence]) -> str:
    hosts = sorted({host or source for host, source in cluster})
    shown = ", ".join(hosts[:4]) + (f" and {len(hosts) - 4} more" if len(hosts) > 4 else "")
    topics = sorted({t for ev in evidence for t in ev.topics})
    if topics:
        what = "consumers of " + ", ".join(topics[:3]) + (f" and {len(topics) - 3} more topics" if len(topics) > 3 else "")
    else:
        libraries = sorted({library for ev in evidence for library, _ in ev.clients})
        what = (" and ".join(libraries) + " consumers") if libraries else "consumers"
    return f"{what} on {shown} {UNNAMED}"


# What the diagnosis fills in place (``link``, ``assign``, ``gather``, ``lives.link``, ``sessions.link``): the attrs
# key that says so, and the column it filled. A group a handle's own lines state (``group_from = "handle"``:
# core/handles.py, at parse) is the parse's, not the diagnosis's.
_FILLED = {"group_from": "group", "member_from": "member", "client_from": "client", "generation_from": "generation"}
_PARSED = "handle"


def forget(events: list[dict]) -> int:
    """Undo in place what the diagnosis filled in (the group, member and client.id it gave lines that name none), so
    that the next diagnosis decides it anew from every line held (``analyze --follow`` diagnoses the same events
    again as lines come: a process's lines first gathered under a name made up from the processes take the group a
    line read later names, as ``analyze`` of the finished log gives them). Returns how many lines it undid."""
    undone = 0
    for e in events:
        attrs = e.get("attrs")
        if not attrs or not any(k in attrs for k in (*_FILLED, "life")):
            continue
        kept = dict(attrs)
        for key, column in _FILLED.items():
            if key in kept and kept[key] != _PARSED:
                del kept[key]
                e[column] = None
        kept.pop("life", None)
        if len(kept) != len(attrs):
            e["attrs"] = kept or None
            undone += 1
    return undone


def say(event: dict, what: str, who: str = "coordinator") -> None:
    attrs = dict(event.get("attrs") or {})
    attrs[what] = who
    event["attrs"] = attrs


def _members(events: list[dict], spans: _Spans) -> None:
    """A client line saying its member leaves or lost its membership, naming no member id, is about the member the
    coordinator removed then: when exactly one member of its client.id was (its group's, as stated or linked)."""
    taken: set[str] = set()
    for e in events:
        if not e.get("library") or e.get("member") or e["event"] not in _LEAVING or e.get("ts") is None \
                or e.get("component") == "broker":
            continue
        cid = client_id(e.get("client"))
        removed = [s for s in spans.get(e.get("group") or "", {}).get(cid or "", ()) if _removed_then(s, e)]
        if len(removed) == 1 and removed[0][0] not in taken:
            taken.add(removed[0][0])
            e["member"] = removed[0][0]
            say(e, "member_from")


# group -> client.id -> [(member id, first line, removal or None, removed)]
_Spans = dict[str, dict[str, list[list]]]


def member_spans(events: list[dict]) -> _Spans:
    members: dict[tuple[str, str], list] = {}
    for e in events:
        member, group = e.get("member"), e.get("group")
        if not member or not group or e.get("component") != "broker" or e.get("ts") is None:
            continue
        span = members.get((group, member))
        if span is None:
            first = None if e["event"] in _DEPARTURES else e["ts"]
            span = members[(group, member)] = [member, first, None, None]
        if e["event"] in _DEPARTURES:
            span[2] = e["ts"]
            span[3] = e["event"]
    out: _Spans = {}
    for (group, member), span in members.items():
        cid = identity.client_of_member(member)
        if cid != member:       # a classic member id names its client.id (a KIP-848 one does not)
            out.setdefault(group, {}).setdefault(cid, []).append(span)
    return out


def _group_of(cid: str, rows: list[dict], spans: _Spans) -> str | None:
    times = [e["ts"] for e in rows if e.get("ts") is not None]
    if not times:
        return None
    allowance = timedelta(milliseconds=ALLOWANCE_MS)
    first, last = min(times) - allowance, max(times) + allowance
    candidates = [g for g, by_client in spans.items()
                  if any(_overlaps(s, first, last) for s in by_client.get(cid, ()))]
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        return None
    leaving = [e for e in rows if e["event"] in _LEAVING and e.get("ts") is not None]
    matched = {g for g in candidates for e in leaving if any(_removed_then(s, e) for s in spans[g][cid])}
    return matched.pop() if len(matched) == 1 else None


def _overlaps(span: list, first: datetime, last: datetime) -> bool:
    _, joined, removed, _ = span
    return (joined is None or joined <= last) and (removed is None or removed >= first)


def _removed_then(span: list, line: dict) -> bool:
    """The coordinator removed this member when the client's line says it left or lost its membership."""
    removed = span[2]
    if removed is None:
        return False
    allowance = timedelta(milliseconds=ALLOWANCE_MS)
    ts = line["ts"]
    since = timedelta(milliseconds=int(line.get("delay_ms") or 0)) if line["event"] == EV.SESSION_TIMEOUT \
        else timedelta(0)
    return ts - since - allowance <= removed <= ts + allowance
