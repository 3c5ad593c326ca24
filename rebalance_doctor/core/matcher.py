"""Match a message body against the packs: scan literal -> gate -> regex, most specific first."""

from __future__ import annotations

from dataclasses import dataclass

import regex

from .packs import REGEX_TIMEOUT_S, PackSet, Variant


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
        by_key: dict[str, list[Variant]] = {k: [] for k in self.scan_keys}
        for variant in packs.variants():
            for key in self.scan_keys:
                if key in variant.gate:
                    by_key[key].append(variant)
        # Longer gates are more specific: "Pending member X in group" before "member X in group".
        for variants in by_key.values():
            variants.sort(key=lambda v: -len(v.gate))
        self.by_key = by_key

    def candidates(self, body: str) -> list[Variant]:
        seen: set[int] = set()
        found: list[Variant] = []
        for key in self.scan_keys:
            if key in body:
                for variant in self.by_key[key]:
                    if id(variant) not in seen and variant.gate in body:
                        seen.add(id(variant))
                        found.append(variant)
        found.sort(key=lambda v: -len(v.gate))
        return found

    def match(self, body: str, logger: str | None = None) -> Match | Miss | None:
        """The first variant whose regex matches; Miss when gates hit but no regex; None otherwise."""
        candidates = self.candidates(body)
        if not candidates:
            return None
        if logger:
            cls = logger.rsplit(".", 1)[-1]
            candidates.sort(key=lambda v: 0 if (not v.loggers or cls in v.logger_classes) else 1)
        for variant in candidates:
            try:
                m = variant.compiled.search(body, timeout=REGEX_TIMEOUT_S)
            except TimeoutError:
                continue
            if m is not None:
                return Match(variant, {k: v for k, v in m.groupdict().items() if v is not None})
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
