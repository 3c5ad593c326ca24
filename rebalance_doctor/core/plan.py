"""How a unit of work is read: the readers its records are split with, and the line fixes its file needs.

A reader is a layout behind an optional container prefix (``kafka`` behind ``docker-compose``).
Most files need one reader and no fix: their plan travels in a unit as the layout's name and the
container's (what the engines already pass around, to worker processes and Spark executors
alike). A stream that mixes layouts or prefixes, or a file whose lines need fixing (colour codes,
hard wrapping), travels as ``plan:{...}`` in the layout's place.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

PREFIX = "plan:"


@dataclass(frozen=True)
class Plan:
    readers: tuple[tuple[str, str | None], ...]   # (layout name or conversion pattern, container name)
    colours: bool = False                          # strip ANSI colour codes
    wrap: int = 0                                  # the width lines were hard-wrapped at (0: none)

    @property
    def fixes(self) -> bool:
        """Whether the file's bytes are changed before they are scanned (it is then read whole)."""
        return self.colours or bool(self.wrap)

    def encode(self) -> tuple[str, str | None]:
        """The (layout, container) strings a unit carries."""
        if len(self.readers) == 1 and not self.fixes:
            return self.readers[0]
        data = {"readers": [list(r) for r in self.readers], "colours": self.colours, "wrap": self.wrap}
        return PREFIX + json.dumps(data, separators=(",", ":")), self.readers[0][1]

    @classmethod
    def decode(cls, layout: str, container: str | None) -> "Plan":
        if not layout.startswith(PREFIX):
            return cls(((layout, container),))
        data = json.loads(layout[len(PREFIX):])
        return cls(tuple((r[0], r[1]) for r in data["readers"]), bool(data.get("colours")), int(data.get("wrap", 0)))

    def describe(self, readers: list[tuple[str, str | None]]) -> str:
        """The layout column of the accounting: the first reader's layout (its container is
        shown beside it), the other readers with theirs, then the fixes."""
        text = readers[0][0] + "".join(f" + {name}" + (f" in {container}" if container else "")
                                       for name, container in readers[1:])
        if self.wrap:
            text += f", lines unwrapped at {self.wrap} columns"
        if self.colours:
            text += ", colour codes removed"
        return text
