"""Which Kafka version wrote a file, from the wording of its lines.

Every pattern variant names the Kafka versions whose wording it reads (``kafka = ">=3.6,<3.9"``).
The releases that every recognised line of a file agrees with bound the version that wrote
it. The answer uses the packs' range syntax over the sampled releases (``>3.3.1,<3.9``: newer
than 3.3.1, older than 3.9). A ``Kafka version:`` line or ``--kafka-version`` gives the exact version and
takes precedence; lines that contradict the rest (a file mixing a broker and older clients)
are left out rather than emptying the range.
"""

from __future__ import annotations

import regex

from .packs import PackSet, version_in_range

# The releases whose wording the packs were checked against (the template inventory, 2.4-4.2),
# and three older ones that stand for the broker wordings before it: 0.10 ("restabilize"), 0.11-2.0
# (no state, no reason) and 2.1-2.3 (2.4's wording): a file in those wordings is "<2.4".
RELEASES = ("0.10.0", "2.0.0", "2.3.0", "2.4.0", "2.8.0", "3.0.0", "3.3.1", "3.6.0", "3.9.0", "4.0.0", "4.1.0", "4.2.0")


def from_wording(packs: PackSet, events: list[dict]) -> str | None:
    """A version range like ``>3.3.1,<3.9`` that the events' wording allows, or None when it says nothing."""
    return as_range(narrow(packs, events))


def as_range(possible: set[str]) -> str | None:
    """The releases ``narrow`` left as a range, or None when they are all of them (nothing was said)."""
    if possible == set(RELEASES):
        return None
    return release_range(possible)


def narrow(packs: PackSet, events: list[dict], possible: set[str] | None = None) -> set[str]:
    """The releases the events' wording allows, narrowed line by line from ``possible`` (all releases): a file
    read as it grows narrows on from where its earlier lines left it, the same as over all its lines at once."""
    possible = set(RELEASES) if possible is None else set(possible)
    by_pattern: dict[str, frozenset[str]] = {}
    for event in events:
        # The matched variant's range (attrs.kafka_wording), else what any variant of the pattern allows.
        wording = (event.get("attrs") or {}).get("kafka_wording")
        key = wording or event.get("pattern")
        allowed = by_pattern.get(key)
        if allowed is None:
            pattern = packs.patterns.get(event.get("pattern"))
            if wording:
                allowed = frozenset(r for r in RELEASES if _allows(r, wording))
            elif pattern is not None:
                allowed = frozenset(r for r in RELEASES if any(_allows(r, v.kafka) for v in pattern.variants))
            else:
                continue
            by_pattern[key] = allowed
        narrowed = possible & allowed
        if narrowed:
            possible = narrowed
    return possible


_INVENTORY_FLOOR = regex.compile(r">=\s*2\.4(?:\.0)?(?![.\d])")


def _allows(release: str, spec: str) -> bool:
    """Whether ``release`` may have written a line of wording ``spec``. A range that starts at 2.4
    starts where the template inventory does, not where the wording does: it says nothing of the
    releases before (they are allowed when its other bounds allow them)."""
    if release < "2.4" and _INVENTORY_FLOOR.search(spec):
        spec = _INVENTORY_FLOOR.sub(">=0", spec)
    return version_in_range(release, spec)


def release_range(releases: set[str]) -> str:
    """The range between the sampled releases around ``releases``: ``>3.6,<4.0`` when 3.9.0 is
    the only one in, since the wording may have changed in any release after 3.6 and before 4.0
    (the releases in between were not sampled). Open-ended at either end of the sample."""
    ordered = [r for r in RELEASES if r in releases]
    first, last = RELEASES.index(ordered[0]), RELEASES.index(ordered[-1])
    clauses = []
    if first > 0:
        clauses.append(f">{_short(RELEASES[first - 1])}")
    if last + 1 < len(RELEASES):
        clauses.append(f"<{_short(RELEASES[last + 1])}")
    return ",".join(clauses)


def _short(release: str) -> str:
    major, minor, patch = release.split(".")
    return f"{major}.{minor}" if patch == "0" else release


def is_stated(version: str | None) -> bool:
    """A version a line or --kafka-version gave (``3.6.1``), as opposed to a range from wording."""
    return bool(version) and not any(c in version for c in "<>,")  # type: ignore[operator]


def for_later_range(stated_before: str | None, own: str | None) -> tuple[str | None, tuple[str | None, ...]]:
    """The version of a byte range after the first one of a file, and which of its events take
    the version stated before the range instead of the one they carry.

    An event carries the last version its file stated before it, as if the file were read in one
    piece. A range only sees the ``Kafka version:`` lines inside it: when it stated none, it takes
    the one stated before it (not a guess from its wording) and so do all its events; when it
    stated one, its events before that line (they carry None) take the one stated before it. So
    the events do not depend on where ranges are cut (``--jobs``, the Spark engine).
    """
    if not stated_before:
        return own, ()
    if is_stated(own):
        return own, (None,)
    return stated_before, (own, None)
