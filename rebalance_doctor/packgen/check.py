"""Read a rendered line through the real parsing path and compare what it yields."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from ..core import timestamps
from ..core.context import load_context_reader
from ..core.layouts import load_layouts
from ..core.matcher import Matcher, Miss
from ..core.packs import PackSet, load_packs
from ..core.parse import FileContext, RecordParser
from ..core.schema import CAPTURE_COLUMNS
from .render import BASE_DATE, Rendered


class Reader:
    """The parsing core set up once for many single lines."""

    def __init__(self, packs: PackSet | None = None, pack_dirs: list[Path] | None = None,
                 include_default: bool = True):
        self.packs = packs or load_packs(pack_dirs or [], include_default=include_default)
        self.matcher = Matcher(self.packs)
        self.parser = RecordParser(self.matcher, load_context_reader())
        self.layouts = load_layouts()
        self.scan_keys = self.packs.scan_keys
        self._files: dict[str, FileContext] = {}

    def read(self, rendered: Rendered):
        """The event dict, a Miss, or None; None too when no scan literal would see the line."""
        if not any(key in rendered.line for key in self.scan_keys):
            return None
        file = self._files.get(rendered.layout)
        if file is None:
            layout = self.layouts.by_name(rendered.layout)
            file = FileContext("inventory", "synth", layout, None, timestamps.zone("UTC"),
                               date.fromisoformat(BASE_DATE))
            self._files[rendered.layout] = file
        return self.parser.parse(rendered.line, 1, file)


def field_problems(event: dict, expected: dict[str, object]) -> list[str]:
    """What the event got wrong or left out of the columns the line states (attrs are extras)."""
    problems = []
    for name, want in expected.items():
        if name not in CAPTURE_COLUMNS:
            continue
        have = event.get(name)
        if isinstance(want, str) and isinstance(have, str):
            have = have.strip()
        if have != want:
            problems.append(f"{name}: expected {want!r}, got {have!r}")
    return problems


def outcome(reader: Reader, rendered: Rendered) -> tuple[str | None, list[str]]:
    """(pattern id or None, problems) for one rendered line."""
    found = reader.read(rendered)
    if found is None:
        return None, ["not recognised (no scan literal or gate in the line)"]
    if isinstance(found, Miss):
        return None, [f"near miss: gates hit but no regex matched (closest {found.closest})"]
    return found["pattern"], field_problems(found, rendered.fields)
