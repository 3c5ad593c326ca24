"""The closed sets of values options take: shown in --help, checked by typer, completed by the shell."""

from __future__ import annotations

from enum import Enum


class Format(str, Enum):
    """What `analyze` writes to stdout."""

    human = "human"
    json = "json"
    markdown = "markdown"


class Engine(str, Enum):
    auto = "auto"
    local = "local"
    spark = "spark"


class FailOn(str, Enum):
    critical = "critical"
    warning = "warning"
    info = "info"
    never = "never"


class EventsFormat(str, Enum):
    jsonl = "jsonl"
    csv = "csv"
    parquet = "parquet"


class SummaryFormat(str, Enum):
    """What `batch` writes to stdout."""

    human = "human"
    json = "json"


class QueryOutput(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"


def layout_names() -> list[str]:
    """The shipped layouts' names (patterns/layouts.toml); empty when the data cannot be read.

    Read for every command's --layout help, so without parsing the TOML (10 ms of start-up): each
    ``[[layout]]`` table's ``name = "..."`` key, the line after its header (tests/test_startup.py
    holds it to the parsed file)."""
    import re

    from ..core.paths import patterns_dir

    try:
        text = (patterns_dir() / "layouts.toml").read_text(encoding="utf-8")
    except (OSError, ValueError):
        return []
    return re.findall(r'(?m)^\[\[layout\]\]\s*\nname\s*=\s*"([^"]+)"', text)


def complete_layout(incomplete: str) -> list[str]:
    return [name for name in layout_names() if name.startswith(incomplete)]


def value(choice) -> str | None:
    """An enum member's value (typer hands the member over), or None."""
    return choice.value if isinstance(choice, Enum) else choice
