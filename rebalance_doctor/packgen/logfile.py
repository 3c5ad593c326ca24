"""Records written into one log file as operators find them: foreign lines between the records and
hard-wrapped lines.

Between rendered records go lines no logging framework wrote for them: a Kibana/Elastic export's
date line before each record (``Jan 17, 2020 @ 15:54:24.877``), an application's ``print()``
output, CLI output, blank lines. A file may be hard-wrapped at a terminal's width (80 or 200
columns). ``write`` returns the file's text and, for each record, the 1-based line it starts on,
so a reading of the file can be compared record by record with what each record states.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .render import Rendered

MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
PRINTS = ("Processing batch 42 of 100", "done", "{'status': 'ok', 'count': 12}", "Message with name=0MW VIDK9, age=89",
          "Traceback (most recent call last): see above", "$ kafka-consumer-groups --describe --group orders",
          "GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG",
          "orders          orders          0          3960            3961            1",
          "==> consumer.log <==", "127.0.0.1 - - [05/Mar/2024:09:14:03 +0000] \"GET /health HTTP/1.1\" 200 2")


@dataclass(frozen=True)
class Placed:
    rendered: Rendered
    line: int          # 1-based line of the record's first line in the file


def kibana_date(rng: random.Random) -> str:
    """The date line a Kibana/Elastic 'Discover' export puts before each document."""
    return (f"{rng.choice(MONTHS)} {rng.randint(1, 28)}, {rng.randint(2019, 2025)} @ "
            f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}")


def foreign_line(rng: random.Random) -> str:
    return rng.choice((kibana_date(rng), rng.choice(PRINTS), ""))


def write(records: list[Rendered], rng: random.Random, foreign_rate: float = 0.5, kibana: bool = False,
          wrap: int = 0) -> tuple[str, list[Placed]]:
    """The file's text and where each record starts. ``kibana``: a date line before every record (an
    export), besides the ``foreign_rate`` share of records that get a foreign line after them."""
    lines: list[str] = []
    placed: list[Placed] = []
    for rendered in records:
        if kibana:
            lines.append(kibana_date(rng))
        placed.append(Placed(rendered, len(lines) + 1))
        lines.extend(rendered.line.rstrip("\n").split("\n"))
        if rng.random() < foreign_rate:
            lines.append(foreign_line(rng))
    if wrap:
        lines, placed = _wrapped(lines, placed, wrap)
    return "\n".join(lines) + "\n", placed


def _wrapped(lines: list[str], placed: list[Placed], width: int) -> tuple[list[str], list[Placed]]:
    """Every line cut at ``width`` characters, as a terminal or a fixed-width export does it."""
    out: list[str] = []
    new_start: dict[int, int] = {}
    for number, line in enumerate(lines, start=1):
        new_start[number] = len(out) + 1
        if not line:
            out.append(line)
            continue
        out.extend(line[i:i + width] for i in range(0, len(line), width))
    return out, [Placed(p.rendered, new_start[p.line]) for p in placed]
