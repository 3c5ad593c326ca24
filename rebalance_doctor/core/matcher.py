"""Match a message body against the packs: scan literal -> gate -> regex, most specific first."""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

import re

import regex

from . import regex_guard
from .packs import REGEX_TIMEOUT_S, PackSet, Variant

_WORD = re.compile(r"[A-Za-z0-9_]+")
_SPACE_INDENT = regex.compile(r"^ {2,}(?=\S)", regex.MULTILINE)
_EXCEPTION_LINE = regex.compile(r"^(?:Caused by: )?(?:[A-Za-z_$][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error|Throwable)\b.*$",
                                regex.MULTILINE)
_SPECIFICITY = attrgetter("specificity")


@dataclass
class Match:
    variant: Variant
    groups: dict[str, str]


class MessageText:
    """What the patterns read of a record: the first line of its message (context prefix removed),
    the message with its continuation lines, and the exception lines it carries."""

    __slots__ = ("head", "rest", "_full", "_exception")

    def __init__(self, head: str, rest: str | None = None):
        self.head = head
        self.rest = rest          # the continuation lines, None when the record has none
        self._full: str | None = None
        self._exception: str | None = None

    @property
    def continued(self) -> bool:
        return self.rest is not None

    @property
    def full(self) -> str:
        """The message with its continuation lines. Each line of a log ends with a newline: a
        spanning template's "\n{}" still finds it when nothing of the record follows."""
        if self._full is None:
            self._full = self.head + "\n" if self.rest is None else f"{self.head}\n{_tabbed(self.rest)}\n"
        return self._full

    def exception(self) -> str:
        """The exception lines of the record's stack trace (its first line and each "Caused by:")."""
        if self._exception is None:
            self._exception = "\n".join(_EXCEPTION_LINE.findall(self.rest)) if self.rest else ""
        return self._exception


def _tabbed(rest: str) -> str:
    """Continuation lines whose tab indents a shipper or an export turned into spaces, with tabs
    again (the smallest space indent is one tab), as Kafka's templates write them."""
    if not rest.startswith("  ") and "\n  " not in rest:
        return rest
    indents = [len(m.group()) for m in _SPACE_INDENT.finditer(rest)]
    if not indents:
        return rest
    unit = min(indents)
    return _SPACE_INDENT.sub(lambda m: "\t" * max(1, round(len(m.group()) / unit)), rest)


@dataclass
class Miss:
    """A body that holds a pattern's gate but matches none of its regexes (a near miss)."""

    closest: str | None


class Matcher:
    def __init__(self, packs: PackSet):
        self.packs = packs
        self.scan_keys = packs.scan_keys
        self.scan_bytes = tuple(k.encode() for k in self.scan_keys)
        # Gates are found through an index of whole words: a gate is filed under the rarest word
        # it holds whole (delimited inside the gate itself, so delimited in any body holding
        # the gate), and a body looks up its own words. Gates without such a word ("Stabilized
        # group") are tried one by one. Exact, and cheap whatever the number of patterns; gates
        # need not contain a scan literal, so scan literals may be few, shared ones.
        variants = packs.variants()
        words_of = {gate: _inner_words(gate) for gate in {v.gate for v in variants}}  # once a gate, not twice a variant
        frequency: dict[str, int] = {}
        for variant in variants:
            for word in words_of[variant.gate]:
                frequency[word] = frequency.get(word, 0) + 1
        by_word: dict[str, list[Variant]] = {}
        unindexed: list[Variant] = []
        for variant in variants:
            words = words_of[variant.gate]
            if words:
                by_word.setdefault(min(words, key=lambda w: (frequency[w], w)), []).append(variant)
            else:
                unindexed.append(variant)
        self.by_word = by_word
        self.unindexed = unindexed
        self._words = frozenset(by_word)
        # Every variant under its gate: what a caller that found the gates already looks up.
        self._by_gate: dict[str, list[Variant]] = {}
        for variant in variants:
            self._by_gate.setdefault(variant.gate, []).append(variant)
        # Unindexed variants share a few gates ("Stabilized group", "with generation"): test each once.
        self._unindexed_by_gate = {v.gate: self._by_gate[v.gate] for v in unindexed}
        self._spanning = any(v.spans for v in variants)
        # The gates of spanning variants: a record whose gates hold none of them has no spanning
        # candidate on its later lines (most records: no second look at the whole message).
        self._spanning_gates = frozenset(v.gate for v in variants if v.spans)
        self._whole_gates = frozenset(v.gate for v in variants if v.whole)
        self._exception_variants = [v for v in variants if v.reads_exception]
        self._exception_gates = frozenset(v.gate for v in self._exception_variants)

    def candidates(self, body: str, gates: "set[str] | None" = None) -> list[Variant]:
        """Variants whose gate the body holds, most specific (priority, then longest gate) first.

        ``gates``: a superset of the gates the body holds, when the caller already knows one (the
        Aho-Corasick scan engine finds them in the record's bytes); the answer is the same, found cheaper.
        """
        if gates is not None:
            found = [v for gate in gates if gate in body for v in self._by_gate.get(gate, ())]
        else:
            found = [v for gate, group in self._unindexed_by_gate.items() if gate in body for v in group]
            for word in self._words.intersection(_WORD.findall(body)):
                for variant in self.by_word[word]:
                    if variant.gate in body:
                        found.append(variant)
        if len(found) > 1:
            found.sort(key=_SPECIFICITY)
        return found

    def match(self, text: "MessageText | str", logger: str | None = None, gates: "set[str] | None" = None
              ) -> Match | Miss | None:
        """The first variant whose regex matches; Miss when gates hit but no regex; None otherwise.

        A pattern reads the first line of the message (``MessageText.head``) and its match begins
        there, so no line that follows a record can unmake or make its event. Patterns whose
        templates span lines also read the continuation lines (``MessageText.full``); patterns that
        read the exception a record carries (``reads = "exception"``) also read its exception lines.
        """
        if isinstance(text, str):
            text = MessageText(text)
        head = text.head
        candidates = self.candidates(head, gates)
        exception = ""
        if text.rest is not None:
            seen = {id(v) for v in candidates}
            more = []
            if self._spanning and (gates is None or not gates.isdisjoint(self._spanning_gates)):
                # A spanning template's gate may be on one of its later lines.
                more = [v for v in self.candidates(text.full, gates) if v.spans and id(v) not in seen]
            if self._exception_gates and (gates is None or not gates.isdisjoint(self._exception_gates)):
                exception = text.exception()
                more += [v for v in self._exception_variants if v.gate in exception and id(v) not in seen]
            if more:
                candidates = sorted({id(v): v for v in candidates + more}.values(), key=_SPECIFICITY)
        if candidates and self._whole_gates and (gates is None or not gates.isdisjoint(self._whole_gates)):
            stripped = head.strip()
            candidates = [v for v in candidates if not v.whole or stripped == v.gate]
        if not candidates:
            return None
        if logger and len(candidates) > 1:
            cls = logger.rsplit(".", 1)[-1]
            candidates.sort(key=lambda v: (-v.priority, 0 if (not v.loggers or cls in v.logger_classes) else 1))
        if regex_guard.exhausted():   # the file's (the run's) regex time is spent: not examined, counted
            regex_guard.skip()
            return Miss(candidates[0].pattern_id)
        began = regex_guard.clock()
        try:
            return self._first(candidates, head, text, exception)
        finally:
            regex_guard.spend(regex_guard.clock() - began)

    def _first(self, candidates: list[Variant], head: str, text: "MessageText", exception: str) -> Match | Miss:
        for variant in candidates:
            try:
                if variant.reads_first_line_only:  # most variants: the search, without a call around it
                    m = (variant._compiled or variant.compiled).search(head, timeout=REGEX_TIMEOUT_S)
                else:
                    m = self.search(variant, text, exception)
            except TimeoutError:
                regex_guard.timed_out()  # counted in the file's accounting (regex_timeouts)
                continue
            except regex.error:
                continue
            if m is not None:
                groups = {k: v for k, v in m.groupdict().items() if v is not None}
                if variant.informative_range:
                    # Evidence for the file's Kafka version (core/versions.py): this wording's releases.
                    groups.setdefault("kafka_wording", variant.kafka)
                return Match(variant, groups)
        return Miss(candidates[0].pattern_id)

    @staticmethod
    def search(variant: Variant, text: "MessageText", exception: str = ""):
        """The variant's match in what it reads of the record, beginning on the message's first
        line (or on an exception line, for a pattern that reads them); None when there is none."""
        head = text.head
        if variant.reads_exception:
            exception = exception or text.exception()
            return variant.compiled.search(head + "\n" + exception if exception else head, timeout=REGEX_TIMEOUT_S)
        if not variant.spans:
            return variant.compiled.search(head, timeout=REGEX_TIMEOUT_S)
        m = variant.compiled.search(text.full, timeout=REGEX_TIMEOUT_S)
        return m if m is not None and m.start() <= len(head) else None

    def closest(self, body: str) -> tuple[str, int, int] | None:
        """For a miss: the variant that matched the longest prefix of its regex, and how far.

        Used by ``patterns check`` / ``patterns test`` to say where matching stopped.
        """
        best: tuple[str, int, int] | None = None
        for variant in self.candidates(body) or self.packs.variants():
            got = _longest_prefix_match(variant.regex_source, body)
            if best is None or got > best[1]:
                best = (variant.label, got, len(body))
        return best


def _longest_prefix_match(source: str, body: str) -> int:
    """The longest n such that the regex can still match once body[:n] is extended (binary search)."""
    try:
        compiled = regex.compile(source)
    except regex.error:
        return 0

    def alive(n: int) -> bool:
        try:
            m = compiled.match(body[:n], partial=True, timeout=REGEX_TIMEOUT_S)
        except TimeoutError:
            return False
        return m is not None and (m.partial or m.end() == n)

    lo, hi = 0, len(body)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if alive(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _inner_words(gate: str) -> set[str]:
    """Words the gate holds whole: delimited on both sides within the gate."""
    return {m.group() for m in _WORD.finditer(gate) if m.start() > 0 and m.end() < len(gate)
            and not gate[m.start() - 1].isalnum() and not gate[m.end()].isalnum()}
