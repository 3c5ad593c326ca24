"""Kafka log-context prefixes (``[Consumer clientId=..., groupId=...]``, ``stream-thread [...]``):
read before the message patterns so that every event knows its group, client and thread."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import regex

from .paths import patterns_dir
from .regex_cache import compiled_regexes
from .toml import load_toml

SEARCH_WINDOW = 300
_NO_GROUP = "null"


@dataclass(frozen=True)
class ContextPrefix:
    name: str
    component: str
    compiled: "regex.Pattern[str]"


@dataclass
class Context:
    fields: dict[str, str]
    component: str | None
    body: str          # the message with the prefix removed


class ContextReader:
    def __init__(self, prefixes: list[ContextPrefix], streams_client: "regex.Pattern[str]"):
        self.prefixes = prefixes
        self.streams_client = streams_client
        # One alternation finds where a prefix starts; the named regex then reads it. A prefix
        # whose regex starts with a literal that is not there is skipped without running it.
        self._any = _compiled("|".join(f"(?:{p.compiled.pattern})" for p in prefixes))[0]
        self._leads = [(_leading_literal(p.compiled.pattern), p) for p in prefixes]

    def read(self, msg: str) -> Context:
        window = msg[:SEARCH_WINDOW]
        hit = self._any.search(window)
        if hit is None:
            return Context({}, None, msg)
        start = hit.start()
        for lead, prefix in self._leads:
            if not window.startswith(lead, start):
                continue
            m = prefix.compiled.match(window, start)
            if m:
                fields = {k: v for k, v in m.groupdict().items() if v}
                component = prefix.component
                # A consumer without group.id prints `groupId=null` (LogContext: groupId.orElse("null")): a Streams
                # restore or global consumer, a consumer assigned its partitions by hand. It is in no group.
                groupless = fields.get("group") == _NO_GROUP and prefix.component in ("consumer", "connect")
                if groupless:
                    del fields["group"]
                self._streams(fields, derive_group=not groupless)
                # A Streams thread's prefix, or a consumer prefix naming a StreamThread's client
                # (a librdkafka "[thrd:main]: " names a thread too, and is no Streams line).
                if component == "streams" or "StreamThread" in fields.get("client", ""):
                    component = "streams" if component in ("consumer", "streams") else component
                return Context(fields, component, msg[m.end():])
        return Context({}, None, msg)

    def streams_fields(self, fields: dict[str, str]) -> None:
        """The application id (group) and client a StreamThread's name (fields["thread"]) gives."""
        self._streams(fields)

    def _streams(self, fields: dict[str, str], derive_group: bool = True) -> None:
        """Derive the application id (group) and client from a Streams thread or client id."""
        name = fields.get("thread") or fields.get("client")
        if not name:
            return
        m = self.streams_client.match(name)
        if not m:
            return
        if derive_group:
            fields.setdefault("group", m["group"])
        if "thread" in fields:
            fields.setdefault("client", fields["thread"])
            # The assignor's prefix is the main consumer's client id; the thread is its owner.
            if fields["thread"].endswith("-consumer"):
                fields["thread"] = fields["thread"][: -len("-consumer")]
        elif m["thread_no"]:
            fields.setdefault("thread", regex.sub(r"-(?:consumer|restore-consumer|producer)$", "", name))


_SPECIAL = ".^$*+?{}[]|()\\"


def _leading_literal(pattern: str) -> str:
    """Text every match of ``pattern`` starts with, as far as its source says so plainly."""
    if "|" in pattern:
        return ""  # an alternation may start with either side
    lead: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern[i] == "\\" and i + 1 < len(pattern) and not pattern[i + 1].isalnum():
            char, i = pattern[i + 1], i + 2
        elif pattern[i] in _SPECIAL:
            break
        else:
            char, i = pattern[i], i + 1
        following = pattern[i:i + 1]
        if following and following in "?*{":
            break  # optional or counted: the literal ends before it
        lead.append(char)
        if following == "+":
            break
    return "".join(lead)


@lru_cache(maxsize=4)
def load_context_reader(path: str | None = None, java_only: bool = False) -> ContextReader:
    """The prefixes of prefixes.toml (or ``path``); ``java_only``: without those a non-Java client
    library writes (``client = true``), for units read with Java layouts only."""
    data = load_toml(Path(path) if path else patterns_dir() / "prefixes.toml")
    entries = [p for p in data.get("prefix", []) if not (java_only and p.get("client"))]
    streams_source = data.get("streams", {}).get("client", r"(?!)")
    *compiled, streams = _compiled(*(p["regex"] for p in entries), streams_source)
    prefixes = [ContextPrefix(p["name"], p.get("component", "consumer"), rx) for p, rx in zip(entries, compiled)]
    return ContextReader(prefixes, streams)


def _compiled(*sources: str) -> list["regex.Pattern[str]"]:
    """The sources compiled, from the regex cache when there is one (the prefixes and their
    alternation took ~0.1 CPU-s a process to compile)."""
    cached = compiled_regexes(sources) or {}
    return [cached.get(source) or regex.compile(source) for source in sources]
