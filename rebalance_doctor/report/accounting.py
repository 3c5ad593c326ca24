"""The accounting of a run (what was read, skipped and why) as the reports show it.

The data is ``core.stats.RunStats``; this module only presents it: a one-line summary, the
per-file table for queries and notebooks, the JSON object.
"""

from __future__ import annotations

import dataclasses

from ..core.stats import FileStats, RunStats


def size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def summary_line(stats: RunStats) -> str:
    """What was read, in one line."""
    if stats.engine == "events":
        return "an events table given as such (no log file read)"
    # From the per-file counts, not to_dict(): that copies every file's record (asdict is slow).
    lines = sum(f.lines for f in stats.files)
    skipped = f"; {len(stats.skipped)} skipped" if stats.skipped else ""
    times = time_phrase(stats.time_notes())
    return (f"{stats.files_read} file(s), {size(stats.bytes)}, {lines:,} lines, {stats.events:,} events, "
            f"{stats.near_misses:,} near misses{skipped}" + (f"; times: {times}" if times else ""))


def time_phrase(time: dict) -> str:
    """What file order decided about the times (``RunStats.time_notes``) in one phrase; '' when
    nothing: "20 in a repeated DST hour, 1 backward jump (largest 5.0 h, server.log:31)"."""
    parts = []
    if time.get("repeated_hour"):
        parts.append(f"{time['repeated_hour']:,} in a repeated DST hour (placed by file order)")
    if time.get("nonexistent_times"):
        parts.append(f"{time['nonexistent_times']:,} at local times a DST change skips")
    if time.get("midnights"):
        parts.append(f"{time['midnights']:,} midnight(s) crossed by a time-of-day-only layout")
    if time.get("backward_jumps"):
        largest = time.get("largest_jump") or {}
        where = f"{largest.get('source')}:{largest.get('line')}"
        parts.append(f"{time['backward_jumps']:,} backward jump(s) (largest "
                     f"{_span(largest.get('seconds', 0))}, {where})")
    return ", ".join(parts)


def _span(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.0f} s"


def to_json(stats: RunStats) -> dict:
    """The accounting object of the JSON report: ``RunStats.to_dict()`` as it is."""
    return stats.to_dict()


# FileStats fields that are tables of their own, not columns.
_NOT_COLUMNS = {"near_miss_samples", *FileStats.INTERNAL}


def _arrow_type(annotation: str):
    import pyarrow as pa

    text = str(annotation).replace(" ", "")
    if text.startswith("list[str]"):
        return pa.list_(pa.string())
    if text.startswith("int"):
        return pa.int64()
    if text.startswith("float"):
        return pa.float64()
    if text.startswith("bool"):
        return pa.bool_()
    if text.startswith("str"):
        return pa.string()
    return None


def file_fields() -> list[tuple[str, object]]:
    """(name, arrow type) of the files table: every plain field of FileStats, then status/reason."""
    import pyarrow as pa

    out = []
    for f in dataclasses.fields(FileStats):
        if f.name in _NOT_COLUMNS:
            continue
        kind = _arrow_type(f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type)))
        if kind is not None:
            out.append((f.name, kind))
    out += [("status", pa.string()), ("reason", pa.string())]
    return out


def files_table(stats: RunStats):
    """One row per file read (``status`` 'read') and per file or member skipped (``status``
    'skipped' with its ``reason``), as a ``pyarrow.Table``."""
    import pyarrow as pa

    fields = file_fields()
    rows = []
    for f in stats.files:
        row = {name: getattr(f, name, None) for name, _ in fields}
        row["status"], row["reason"] = "read", None
        rows.append(row)
    for item in stats.skipped:
        rows.append({"source": item.get("source"), "status": "skipped", "reason": item.get("reason")})
    schema = pa.schema([pa.field(name, kind) for name, kind in fields])
    return pa.Table.from_pydict({name: [r.get(name) for r in rows] for name, _ in fields}, schema=schema)


def fit(table, console):
    """``table`` when it fits the console's width; else the same rows stacked, one record per
    block (its first cell on a line, the others as "name value" under it), so that a narrow
    terminal wraps values instead of squeezing columns to nothing."""
    from rich.console import Group
    from rich.padding import Padding
    from rich.text import Text

    from rich.measure import Measurement

    # Measured without the console's width as a ceiling: the width the table wants to have.
    if Measurement.get(console, console.options.update_width(100_000), table).maximum <= console.width:
        return table
    columns = table.columns
    cells = [list(column.cells) for column in columns]
    blocks = []
    for row in range(len(cells[0]) if cells else 0):
        first = cells[0][row]
        head = first if isinstance(first, Text) else Text(str(first))
        rest = Text()
        for column, values in zip(columns[1:], cells[1:]):
            value = values[row]
            plain = value.plain if isinstance(value, Text) else str(value)
            if not plain or plain == "-":
                continue
            if rest:
                rest.append(" · ")
            rest.append(f"{column.header} ", style="dim")
            rest.append_text(value if isinstance(value, Text) else Text(plain))
        blocks.append(Group(head, Padding(rest, (0, 0, 0, 4))) if rest else head)
    return Group(*blocks)
