"""Redaction (``analyze --redact``): the names of a company's machines and applications replaced by
stable placeholders before any report is rendered, so that a report can go into a ticket.

Applied once, in place, to the whole analysis (``api.Analysis``: its groups, timelines, events,
findings, evidence and accounting) before any renderer sees it; every format then renders only
placeholders, the HTML page's embedded data and the evidence lines included, without a renderer
knowing about redaction.

What is replaced: every identifier the analysis knows (the hosts, groups, members, clients,
group.instance.ids, topics of its events; the values of ``clientId=``, ``transactionalId=`` and the
like in their lines; the hosts of Kafka's ``host:port (id: N ...)`` nodes, of URLs and of
``bootstrap.servers``), wherever it occurs as a whole token in any string (a token ends where a
letter, digit or ``_`` does not follow: ``orders`` in ``orders-0`` and in ``node1/server.log`` is
one, in ``orders2`` it is not), longest first, so that a member id that embeds a client id becomes
one member placeholder (a UUID's first 8 characters, as tables cut it, take the UUID's placeholder);
then by pattern: IPv4 and IPv6 addresses, host names with a domain
(``broker-1.example.com``, ``*.svc.cluster.local``) and UUIDs (Streams process ids).

What stays: Kafka's own words (``assets/redact.toml``: a host named ``kafka`` or ``broker`` keeps
its name), config names, numbers, rule ids, operation and event names, exception classes.
Identifiers made of digits only stay (numbers stay); those of one or two characters are replaced
where a whole string is one (a field), never inside text, where they would hit words.

Placeholders: ``host-1``, ``group-A``, ``topic-1``, ``member-1``, ``client-1``, ``instance-1``,
``txn-1``, ``connector-1``, ``id-1``, ``10.x.x.1`` (IPv6 ``x:x::1``), numbered in the order the
analysis meets them. With a key (``--redact-key``) each is derived from an HMAC-SHA256 of the value
(``host-3f09a1c2``, ``group-7C1D22E0``, ``10.x.x.9b41e0``), so that two reports of one incident
redacted with the same key name the same host the same way. No placeholder is ever an identifier
of the input (a host really named ``host-1`` does not make ``host-1`` ambiguous).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import hmac
import ipaddress
import json
import os
import re
from datetime import date, datetime, time, timedelta, tzinfo
from enum import Enum
from functools import lru_cache
from pathlib import Path, PurePath

from ..core.toml import load_toml

ASSETS = Path(__file__).with_name("assets")

# Placeholder stems, and the order in which a value known as two kinds takes its kind (a Streams
# application's source topic named like its application id is the group).
KINDS = {"host": "host", "cluster": "cluster", "group": "group", "client": "client", "member": "member",
         "instance": "instance", "transactional": "txn", "connector": "connector", "topic": "topic", "id": "id", "ip": "ip", "ipv6": "ipv6"}
_PRIORITY = {kind: n for n, kind in enumerate(KINDS)}

# Identifier columns of the events table and their kind.
_COLUMNS = {"host": "host", "cluster": "cluster", "group": "group", "member": "member", "client": "client",
            "instance": "instance"}
_WORD = r"A-Za-z0-9_"
_IPV4 = r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)"
_HEX = r"[0-9A-Fa-f]{1,4}"
_IPV6 = (rf"(?<![\w:.])(?:(?:{_HEX}:){{7}}{_HEX}|(?:{_HEX}(?::{_HEX})*)?::(?:{_HEX}(?::{_HEX})*)?)"
         rf"(?![\w:])")
_DOMAINS = "com|net|org|io|internal|local|localdomain|lan|corp|cloud|intra|intranet|svc|example"
_FQDN = (rf"(?<![\w.-])(?:[A-Za-z0-9](?:[A-Za-z0-9-]{{0,61}}[A-Za-z0-9])?\.)+(?:{_DOMAINS})"
         rf"(?![\w-]|\.[A-Za-z0-9])")
_UUID = r"(?<![\w])[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?![\w])"
_UUID_IN = re.compile(r"([0-9a-fA-F]{8})-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_PATTERNS = re.compile(rf"(?P<ip>{_IPV4})|(?P<ipv6>{_IPV6})|(?P<host>{_FQDN})|(?P<id>{_UUID})")
# Hosts in Kafka's words: a Node (`kafka-1:9092 (id: 1 rack: null)`), a URL, a bootstrap.servers list.
_NODE = re.compile(r"([A-Za-z][\w.-]*)(?:/[0-9.]+)?:\d{1,5} \(id: ")
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://([A-Za-z][\w.-]*)")
_SERVERS = re.compile(r"bootstrap\.servers\s*=\s*\[([^\]]*)\]")
_PLAIN = frozenset({int, float, bool, type(None), datetime})
_ATOMS = (int, float, complex, bool, type(None), bytes, datetime, date, time, timedelta, tzinfo, Enum,
          re.Pattern, type)


@lru_cache(maxsize=1)
def _data() -> dict:
    return load_toml(ASSETS / "redact.toml")


# `key=value` in a log line (`[Consumer clientId=X, groupId=Y]`); the key is looked up in redact.toml's [keys].
_KEY_VALUE = re.compile(r"(?<![\w.])([A-Za-z][\w.]*)\s?=\s?'?([^\s,\]\)}'\"]+)")


@lru_cache(maxsize=1)
def kafka_words() -> frozenset[str]:
    """Kafka's words: never identifiers (see assets/redact.toml)."""
    from ..classify.operations import vocabulary
    from ..core.schema import NAMES
    from ..rules.engine import RULE_IDS

    words = set(_data()["kafka_words"]) | set(NAMES) | set(RULE_IDS) | set(vocabulary())
    return frozenset(words)


class Redactor:
    """The mapping of one report: value -> placeholder, and the rewriting of any text with it."""

    def __init__(self, key: str | bytes | None = None):
        self.key = key.encode() if isinstance(key, str) else key
        self._known: dict[str, str] = {}          # identifier -> kind (the kind with the highest priority)
        self._placeholders: dict[str, str] = {}   # value -> placeholder
        self._kinds: dict[str, str] = {}          # value -> kind it was replaced as
        self._taken: set[str] = set()
        self._counters: dict[str, int] = {}
        self._stop = set(kafka_words())
        self._texts: dict[str, str] = {}
        self._heads: dict[str, str] = {}          # a UUID's first 8 characters -> the UUID
        self._regex: re.Pattern | None = None

    # ------------------------------------------------------------------ what is known

    def know(self, value, kind: str) -> None:
        """``value`` is an identifier of ``kind`` (ignored: empty, one of Kafka's words)."""
        if not isinstance(value, str):
            return
        value = value.strip()
        if value.startswith("/"):            # the broker's clientHost: /10.0.0.7 (the address is a pattern)
            value = value[1:]
        if (not value or value.isdigit() or value in self._stop or value.lower() in self._stop
                or (kind == "topic" and value.startswith("__")) or _PATTERNS.fullmatch(value)):
            return
        known = self._known.get(value)
        if known is None or _PRIORITY[kind] < _PRIORITY[known]:
            self._known[value] = kind
            self._regex = None
        for match in _UUID_IN.finditer(value):
            # Tables and titles cut a UUID to its head (timeline.identity.short): the head stands for
            # its UUID, and takes its placeholder.
            head = match.group(1)
            if head not in self._heads and head not in self._known:
                self._heads[head] = match.group(0)
                self._regex = None

    def know_keyed(self, group: str, cluster: str) -> None:
        """A group keyed by its cluster (``prod/orders``: timeline/clusters.py): its parts are the names
        the logs hold, so each is known by itself and the whole reads ``cluster-1/group-A``."""
        bare = group[len(cluster) + 1:]
        self.know(cluster, "cluster")
        self.know(bare, "group")
        if self._known.get(group) == "group":   # learnt whole from the group column
            del self._known[group]
            self._regex = None

    def know_event(self, event: dict) -> None:
        """Every identifier one row of the events table names (its columns, attrs and message)."""
        for column, kind in _COLUMNS.items():
            self.know(event.get(column), kind)
        cluster, group = event.get("cluster"), event.get("group")
        if cluster and group and group.startswith(cluster + "/"):
            self.know_keyed(group, cluster)
        leader = event.get("leader")
        if leader:
            self.know(leader, "member" if leader == event.get("member") or "-" in leader else "client")
        for partition in event.get("partitions") or ():
            topic, _, number = str(partition).rpartition("-")
            if topic and number.isdigit():
                self.know(topic, "topic")
        attrs = event.get("attrs") or {}
        for name, kind in _data()["attrs"].items():
            value = attrs.get(name)
            if isinstance(value, str):
                self.know(value, kind)
        message = event.get("message")
        if message:
            self.know_text(message)

    def know_text(self, text: str) -> None:
        """The identifiers a log line states in Kafka's words (``clientId=X``, nodes, URLs, bootstrap.servers)."""
        kinds = _data()["keys"]
        # a UUID anywhere in a line (a member id as a key of the leader's assignment map, a process id) is replaced
        # as a pattern; its head stands for it where tables and titles cut it (timeline.identity.short)
        for match in _UUID_IN.finditer(text) if "-" in text else ():
            if match.group(1) not in self._heads and match.group(1) not in self._known:
                self._heads[match.group(1)] = match.group(0)
                self._regex = None
        if "=" in text:
            for match in _KEY_VALUE.finditer(text):
                kind = kinds.get(match.group(1))
                if kind is not None:
                    self.know(match.group(2), kind)
        if "(id: " in text:
            for match in _NODE.finditer(text):
                self.know(match.group(1), "host")
        if "://" in text:
            for match in _URL.finditer(text):
                self.know(match.group(1), "host")
        for match in _SERVERS.finditer(text) if "bootstrap.servers" in text else ():
            for server in match.group(1).split(","):
                self.know(server.strip().rsplit(":", 1)[0], "host")

    # ------------------------------------------------------------------ placeholders

    def placeholder(self, value: str, kind: str) -> str:
        known = self._placeholders.get(value)
        if known is not None:
            return known
        stem = KINDS[kind]
        if self.key is not None:
            # Of the value alone: a report that knows a name as another kind (a client where another
            # report saw the member) still shows the same digits.
            digest = hmac.new(self.key, value.encode(), hashlib.sha256).hexdigest()
            width = 6 if kind == "ip" else 8
            while True:    # two values with one digest prefix: the later one takes a longer prefix
                name = _shape(stem, digest[:width])
                if name not in self._taken and name not in self._known:
                    break
                width += 2
        else:
            while True:
                self._counters[stem] = self._counters.get(stem, 0) + 1
                name = _shape(stem, self._counters[stem])
                if name not in self._taken and name not in self._known:
                    break
        self._placeholders[value] = name
        self._kinds[value] = kind
        self._taken.add(name)
        return name

    def _compiled(self) -> re.Pattern:
        if self._regex is None:
            words = [w for w in self._known if len(w) >= 3] + list(self._heads)
            trie = _trie(words)
            known = rf"(?P<known>{trie})(?![{_WORD}])|" if words else ""
            # Every match starts after a character that is not a letter, digit or _: tested once,
            # before the alternatives, most positions of a text (inside words) fail at once.
            self._regex = re.compile(rf"(?<![{_WORD}])(?:{known}{_PATTERNS.pattern})")
        return self._regex

    def _replace(self, match: re.Match) -> str:
        value = match.group(0)
        kind = match.lastgroup
        if kind == "known":
            if value not in self._known:
                return self.placeholder(self._heads[value], "id")
            return self.placeholder(value, self._known[value])
        if kind == "ip":
            try:
                ipaddress.IPv4Address(value)
            except ValueError:
                return value       # 999.1.2.3: not an address
        elif kind == "ipv6":
            if value == "::":      # a separator ("INFO :: message"), not the unspecified address
                return value
            try:
                ipaddress.IPv6Address(value)
            except ValueError:
                return value
        elif kind == "host" and value.lower() in self._stop:
            return value
        return self.placeholder(value, kind)

    def text(self, text: str) -> str:
        """``text`` with every identifier replaced (the whole text when it is one)."""
        if self._regex is None:
            # Identifiers became known since the texts cached were rewritten (follow mode and `events`
            # learn as they read): one of those texts may hold one of them.
            self._texts.clear()
            self._compiled()
        done = self._texts.get(text)
        if done is not None:
            return done
        stripped = text[1:] if text.startswith("/") else text
        kind = self._known.get(stripped)
        if kind is not None:
            out = text[:len(text) - len(stripped)] + self.placeholder(stripped, kind)
        else:
            out = self._compiled().sub(self._replace, text)
        self._texts[text] = out
        return out

    def mapping(self) -> list[dict]:
        """Each value replaced, with its kind and placeholder, in the order they were met."""
        return [{"kind": self._kinds[v], "value": v, "placeholder": p} for v, p in self._placeholders.items()]

    def write_mapping(self, path: str | Path) -> None:
        """The mapping as JSON (atomically): it holds every original name; keep it out of the ticket."""
        from ..core.writers import atomic_output

        document = {"keyed": self.key is not None, "mapping": self.mapping()}
        with atomic_output(path) as out:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                os.fchmod(out.fileno(), 0o600)    # a new file is private (an existing one keeps its mode)
            out.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")


def _shape(stem: str, n) -> str:
    if stem == "ip":
        return f"10.x.x.{n}"
    if stem == "ipv6":
        return f"x:x::{n}"
    if stem == "group":
        return f"group-{_letters(n) if isinstance(n, int) else n.upper()}"
    return f"{stem}-{n}"


def _letters(n: int) -> str:
    """1 -> A, 26 -> Z, 27 -> AA (spreadsheet columns)."""
    out = ""
    while n:
        n, rest = divmod(n - 1, 26)
        out = chr(ord("A") + rest) + out
    return out


def _trie(words) -> str:
    """One regex for many literal words, longest match first at each position (a trie: linear in the
    text, where an alternation of N words costs N tries per position)."""
    root: dict = {}
    for word in words:
        node = root
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict) -> str:
        ends = "" in node
        branches = [(ch, sub) for ch, sub in sorted(node.items()) if ch]
        if not branches:
            return ""
        parts = []
        for ch, sub in branches:
            text = re.escape(ch)
            while len(sub) == 1 and "" not in sub:     # a chain of single children: one literal
                (ch2, sub), = sub.items()
                text += re.escape(ch2)
            parts.append(text + build(sub))
        body = parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"
        return f"(?:{body})?" if ends else body

    return build(root)


# ---------------------------------------------------------------------------------- the walk


class _Walk:
    """Every string reachable from the analysis rewritten in place (objects of this package,
    dataclasses, dicts, lists, sets, tuples); each object visited once (events are shared by the
    timeline, its rebalances and the findings)."""

    def __init__(self, on_str=None, on_event=None, leave=()):
        self.on_str = on_str
        self.on_event = on_event
        self._seen: dict[int, object] = {id(x): x for x in leave}   # objects that are not the report's
        self.skipped: set[str] = set()     # types of objects left alone (tests: none of ours)

    def __call__(self, value):
        if isinstance(value, str):
            return self.on_str(value) if self.on_str else value
        if isinstance(value, _ATOMS):
            return value
        key = id(value)
        if key in self._seen:
            return self._seen[key]
        self._seen[key] = value
        if isinstance(value, dict):
            if self.on_event is not None and "event" in value and "message" in value:
                self.on_event(value)
            if self.on_str is None:        # learning only: nothing changes
                for k, v in value.items():
                    if type(k) not in _PLAIN:
                        self(k)
                    if type(v) not in _PLAIN:
                        self(v)
                return value
            # The events' dicts are most of the analysis: strings and plain values are handled
            # here without a call per value.
            text = self.on_str
            items, rebuild = [], False
            for k, v in value.items():
                kind = type(k)
                nk = text(k) if kind is str else k if kind in _PLAIN else self(k)
                rebuild = rebuild or nk is not k or kind is not str and kind not in _PLAIN
                kind = type(v)
                items.append((k, nk, text(v) if kind is str else v if kind in _PLAIN else self(v)))
            if rebuild:
                value.clear()
                value.update((nk, nv) for _, nk, nv in items)
            else:
                for k, _, nv in items:
                    if value[k] is not nv:
                        value[k] = nv
        elif isinstance(value, list):
            text = self.on_str
            for n, item in enumerate(value):
                kind = type(item)
                if kind in _PLAIN or (kind is str and text is None):
                    continue
                new = text(item) if kind is str else self(item)
                if new is not item:
                    value[n] = new
        elif isinstance(value, (set, frozenset)):
            items = [self(item) for item in value]
            if isinstance(value, frozenset):
                value = frozenset(items)
            else:
                value.clear()
                value.update(items)
        elif isinstance(value, tuple):
            items = [self(item) for item in value]
            if any(a is not b for a, b in zip(items, value)):
                value = type(value)(*items) if hasattr(value, "_fields") else tuple(items)
        elif isinstance(value, PurePath):
            value = type(value)(self(str(value)))
        elif dataclasses.is_dataclass(value) or type(value).__module__.startswith("rebalance_doctor."):
            names = list(getattr(value, "__dict__", {}))
            for cls in type(value).__mro__:
                names += [s for s in getattr(cls, "__slots__", ()) if s not in ("__dict__", "__weakref__")]
            for name in names:
                try:
                    old = object.__getattribute__(value, name)
                except AttributeError:
                    continue
                new = self(old)
                if new is not old:
                    object.__setattr__(value, name, new)
        else:
            self.skipped.add(f"{type(value).__module__}.{type(value).__qualname__}")
        self._seen[key] = value
        return value


def redact(analysis, key: str | bytes | None = None, redactor: Redactor | None = None) -> Redactor:
    """Replace every identifier in ``analysis`` (an ``api.Analysis``, before anything rendered it) by
    its placeholder, in place; returns the redactor (``mapping()``, ``write_mapping(path)``). ``redactor``:
    one that already holds placeholders (``analyze --follow``: those of the lines it printed)."""
    redactor = redactor if redactor is not None else Redactor(key)
    clusters = {e.get("cluster") for e in analysis.event_rows} - {None}
    for name in [g.timeline.group for g in analysis.groups] + list(analysis.config.groups or []):
        cluster = name.split("/", 1)[0] if "/" in name else None
        if len(clusters) > 1 and cluster in clusters:
            redactor.know_keyed(name, cluster)
        else:
            redactor.know(name, "group")
    # The thresholds are the caller's (an AnalysisConfig may be passed in) and name nobody.
    leave = [analysis.config.thresholds]
    _Walk(on_event=redactor.know_event, leave=leave)(analysis)      # first: learn every identifier
    for f in analysis.stats.files:             # hosts of files without events; names in lines no pattern read
        redactor.know(f.host, "host")
        for miss in f.near_miss_samples:
            redactor.know_text(miss.text)
    walk = _Walk(on_str=redactor.text, leave=leave)
    walk(analysis)
    redactor.skipped = walk.skipped
    return redactor


def redact_rows(rows: list[dict], redactor: Redactor) -> list[dict]:
    """Rows of the events table (or any JSON-like records) rewritten in place, after learning what they name
    (``events --redact``: batch by batch, so a name is known from the batch that first holds it)."""
    learn = _Walk(on_event=redactor.know_event)
    for row in rows:
        learn(row)
    _Walk(on_str=redactor.text)(rows)
    return rows


def redact_value(value, redactor: Redactor):
    """Any value (a row of a query's result, a finding's JSON row, the accounting) with its strings rewritten by
    what ``redactor`` knows; containers are rewritten in place."""
    return _Walk(on_str=redactor.text)(value)
