"""Match a message body against the packs: scan literal -> gate -> regex, most specific first."""

from __future__ import annotations

from dataclasses import dataclass

import regex

from .packs import REGEX_TIMEOUT_S, PackSet, Variant

GRAM = 4  # gates are at least this long


@dataclass
class Match:
    variant: Variant
    groups: dict[str, str]


@dataclass
class Miss:
    """A body that holds a pattern's gate but matches none of its regexes (a near miss)."""

    closest: str | None


class Matcher:
    def __init__(self, packs: PackSet):
        self.packs = packs
        self.scan_keys = packs.scan_keys
        self.scan_bytes = tuple(k.encode() for k in self.scan_keys)
        # Gates are found through an index of 4-character slices: each gate is filed under its
        # rarest slice, and a body looks up its own slices. Exact (a gate in the body has all its
        # slices in the body) and cheap whatever the number of patterns; gates need not contain a
        # scan literal, so scan literals may be few, shared ones (even prefix text).
        variants = packs.variants()
        frequency: dict[str, int] = {}
        for variant in variants:
            for gram in _grams(variant.gate):
                frequency[gram] = frequency.get(gram, 0) + 1
        by_gram: dict[str, list[Variant]] = {}
        for variant in variants:
            key = min(_grams(variant.gate), key=lambda g: (frequency[g], g))
            by_gram.setdefault(key, []).append(variant)
        self.by_gram = by_gram
        self._keys = frozenset(by_gram)

    def candidates(self, body: str) -> list[Variant]:
        """Variants whose gate the body holds, longest gate (most specific) first."""
        found: list[Variant] = []
        keys = self._keys
        grams = set(map("".join, zip(body, body[1:], body[2:], body[3:])))  # every 4-character slice
        for gram in grams.intersection(keys):
            for variant in self.by_gram[gram]:
                if variant.gate in body:
                    found.append(variant)
        found.sort(key=lambda v: (-v.priority, -len(v.gate), v.pattern_id, v.index))
        return found

    def match(self, body: str, logger: str | None = None) -> Match | Miss | None:
        """The first variant whose regex matches; Miss when gates hit but no regex; None otherwise."""
        candidates = self.candidates(body)
        if not candidates:
            return None
        if logger:
            cls = logger.rsplit(".", 1)[-1]
            candidates.sort(key=lambda v: (-v.priority, 0 if (not v.loggers or cls in v.logger_classes) else 1))
        for variant in candidates:
            try:
                m = variant.compiled.search(body, timeout=REGEX_TIMEOUT_S)
            except (TimeoutError, regex.error):
                continue
            if m is not None:
                groups = {k: v for k, v in m.groupdict().items() if v is not None}
                if variant.informative_range:
                    # Evidence for the file's Kafka version (core/versions.py): this wording's releases.
                    groups.setdefault("kafka_wording", variant.kafka)
                return Match(variant, groups)
        return Miss(candidates[0].pattern_id)

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


def _grams(text: str) -> set[str]:
    return {text[i:i + GRAM] for i in range(len(text) - GRAM + 1)}
