"""The four tables `rebalance-doctor query` answers SQL over, and the DuckDB connection holding them.

    events       the events table (core/schema.py; docs/events.md)
    rebalances   one row per rebuilt rebalance (analysis.REBALANCE_COLUMNS; docs/analyze.md)
    findings     one row per finding (analysis.FINDING_COLUMNS; evidence as 'source:line: text')
    files        the accounting: one row per file read (status 'read') or skipped (status 'skipped', reason)

They come from logs (read and diagnosed like `analyze` does), from a Parquet file or directory
written by `events --out X.parquet` (the diagnosis runs on those events), or from the output
directory of `batch` (its events/, rebalances/, findings/ and manifest/ tables). DuckDB is
imported here only: it is an optional extra.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

TABLES = ("events", "rebalances", "findings", "files")
INSTALL = "pip install 'rebalance-doctor[query]'"


class QueryError(ValueError):
    """The query cannot run as asked (bad SQL, an unreadable Parquet input)."""


class MissingDuckDB(RuntimeError):
    """DuckDB (the `query` extra) is not installed."""


def duckdb_module():
    try:
        import duckdb
    except ImportError:
        raise MissingDuckDB(f"query needs DuckDB, which is not installed: {INSTALL}") from None
    return duckdb


@dataclass
class Tables:
    """The four tables as pyarrow Tables (or, for a batch directory, Parquet globs), and where they came from."""

    events: object
    rebalances: object
    findings: object
    files: object
    origin: str   # "logs", "events parquet" or "batch output"
    redaction: object | None = None   # the analysis' redactor (report/redact.py) when the tables are redacted


def kind_of(paths: list[str]) -> str:
    """"batch" (a batch output directory), "parquet" (events Parquet files) or "logs"."""
    if len(paths) == 1:
        path = Path(paths[0])
        if path.is_dir() and (path / "events").is_dir() and ((path / "manifest").is_dir()
                                                             or (path / "manifest.json").is_file()
                                                             or (path / "rebalances").is_dir()):
            return "batch"
    if paths and all(_is_parquet(Path(p)) for p in paths):
        return "parquet"
    return "logs"


def _is_parquet(path: Path) -> bool:
    if path.is_file():
        with open(path, "rb") as handle:
            return handle.read(4) == b"PAR1"
    if path.is_dir():
        files = [p for p in path.rglob("*") if p.is_file() and not p.name.startswith((".", "_"))]
        return bool(files) and all(p.suffix in (".parquet", ".pq") for p in files)
    return False


def from_analysis(analysis) -> Tables:
    return Tables(analysis.events, analysis.rebalances.to_arrow(), analysis.findings.to_arrow(), analysis.files, "logs",
                  analysis.redaction)


def from_events_parquet(paths: list[str], analyze: Callable) -> Tables:
    """Events written by `events --out X.parquet`: read them, and diagnose them like `analyze`."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    try:
        table = ds.dataset([str(p) for p in _parquet_files(paths)], format="parquet").to_table()
    except (OSError, pa.ArrowInvalid) as exc:
        raise QueryError(f"cannot read the events Parquet: {exc}") from None
    analysis = analyze(events=table)
    return Tables(analysis.events, analysis.rebalances.to_arrow(), analysis.findings.to_arrow(),
                  _files_from_events(analysis.events), "events parquet", analysis.redaction)


def _parquet_files(paths: list[str]) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        out += sorted(q for q in p.rglob("*.parquet")) if p.is_dir() else [p]
    return out


def _files_from_events(events):
    """The files table of events given as such: per source and host, the events it gave."""
    import pyarrow as pa

    from ..report.accounting import file_fields

    counts: dict[tuple, int] = {}
    for source, host in zip(events.column("source").to_pylist(), events.column("host").to_pylist()):
        counts[(source, host)] = counts.get((source, host), 0) + 1
    fields = file_fields()
    rows = [{"source": s, "host": h, "events": n, "status": "read", "reason": None} for (s, h), n in sorted(counts.items())]
    schema = pa.schema([pa.field(name, kind) for name, kind in fields])
    return pa.Table.from_pydict({name: [r.get(name) for r in rows] for name, _ in fields}, schema=schema)


def from_batch(directory: str) -> Tables:
    """The tables `batch` wrote: Parquet read in place (events hive-partitioned by date/host)."""
    import pyarrow as pa

    from ..report.accounting import file_fields

    root = Path(directory)
    manifest = {}
    if (root / "manifest").is_dir():
        # The batch manifest table (batch.py): each run appends a row per file it read.
        import pyarrow.parquet as pq

        latest: dict[str, dict] = {}
        for row in sorted(pq.read_table(root / "manifest", columns=["key", "size", "lines", "run"]).to_pylist(),
                          key=lambda r: r["run"]):
            latest[row["key"]] = row
        manifest = {"files": latest}
    elif (root / "manifest.json").is_file():
        try:
            manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise QueryError(f"{root / 'manifest.json'}: cannot read it ({exc})") from None
    fields = file_fields()
    rows = [{"source": key, "bytes": info.get("size"), "lines": info.get("lines"), "status": "read", "reason": None}
            for key, info in sorted((manifest.get("files") or {}).items())]
    schema = pa.schema([pa.field(name, kind) for name, kind in fields])
    files = pa.Table.from_pydict({name: [r.get(name) for r in rows] for name, _ in fields}, schema=schema)
    return Tables(str(root / "events"), str(root / "rebalances"), str(root / "findings"), files, "batch output")


def connect(tables: Tables, database: str = ":memory:"):
    """A DuckDB connection with the four tables; in a file (``database``) they are kept as tables."""
    duckdb = duckdb_module()
    connection = duckdb.connect(database)
    # Times are UTC instants: shown, truncated and compared in UTC whatever the machine's zone.
    connection.execute("SET TimeZone = 'UTC'")
    for name in TABLES:
        source = getattr(tables, name)
        if isinstance(source, str):
            pattern = f"{source}/**/*.parquet"
            if not Path(source).exists():
                raise QueryError(f"{source}: missing from the batch output directory")
            select = f"SELECT * FROM read_parquet('{_quote(pattern)}', hive_partitioning = true, union_by_name = true)"
        else:
            connection.register(f"_{name}_arrow", source)
            select = f"SELECT * FROM _{name}_arrow"
        kind = "TABLE" if database != ":memory:" else "VIEW"
        connection.execute(f'CREATE OR REPLACE {kind} "{name}" AS {select}')
    return connection


def _quote(text: str) -> str:
    return text.replace("'", "''")


def run(connection, sql: str):
    """(column names, rows) of one SQL statement; QueryError with DuckDB's message when it fails."""
    duckdb = duckdb_module()
    try:
        cursor = connection.execute(sql)
    except duckdb.Error as exc:
        message = " ".join(line.strip() for line in str(exc).strip().splitlines() if line.strip())
        raise QueryError(message or type(exc).__name__) from None
    if cursor.description is None:
        return [], []
    return [d[0] for d in cursor.description], cursor.fetchall()
