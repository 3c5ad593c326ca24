"""Write the events table as JSONL, CSV or Parquet, streaming batch by batch; every output file
(events, --stats, --unmatched, reports) is written whole or not at all (``atomic_output``)."""

from __future__ import annotations

import contextlib
import csv
import importlib.abc
import io
import json
import os
import stat
import sys
import uuid
from datetime import datetime
from pathlib import Path
from typing import IO, Iterable, Iterator

from .batches import EventBatch
from .schema import KINDS, NAMES, arrow_schema

FORMATS = ("jsonl", "csv", "parquet")
ROW_GROUP = 8192


class OutputError(ValueError):
    """An output asked for in a way that cannot work (a format, Parquet on stdout)."""


class CannotWrite(OSError):
    """An output file that cannot be written (its errno says whether the path or the machine)."""

    def __init__(self, path: str | Path, cause: OSError):
        super().__init__(cause.errno, cause.strerror or str(cause))
        self.path = str(path)

    def __str__(self) -> str:
        return f"cannot write {self.path}: {self.strerror}"


DISCARD = ("/dev/null",)
STANDARD = ("-", "/dev/stdout", "/dev/stderr")


def _direct(path: str) -> bool:
    """Standard output or /dev/null: written in place (nothing to rename)."""
    return path in STANDARD or path in DISCARD


def check_target(path: str | Path) -> str:
    """The file an output is written to: ``path``, or the file a symbolic link names (written
    through, so the link stays a link). Only a regular file (existing or not) may be written, or
    standard output, or /dev/null: a device (/dev/full), a FIFO, a socket or a directory is
    refused (OutputError: a usage error), never replaced by a regular file."""
    name = str(path)
    if _direct(name):
        return name
    target = os.path.realpath(name)
    try:
        info = os.stat(target)
    except OSError:
        return target   # a new file (whether its directory can take it is found when writing)
    if stat.S_ISREG(info.st_mode):
        return target
    what = ("a directory" if stat.S_ISDIR(info.st_mode) else
            "a character device" if stat.S_ISCHR(info.st_mode) else
            "a block device" if stat.S_ISBLK(info.st_mode) else
            "a FIFO (named pipe)" if stat.S_ISFIFO(info.st_mode) else
            "a socket" if stat.S_ISSOCK(info.st_mode) else "not a regular file")
    raise OutputError(f"cannot write {name}: {what}, not a regular file; outputs go to regular files, "
                      f"- (standard output) or /dev/null")


def _keep_mode(temporary: str | Path, target: str) -> None:
    """An existing file keeps its mode (a 0600 file stays private) and, for root, its owner;
    a new one has the mode the umask gives, as open() made it."""
    try:
        info = os.stat(target)
    except OSError:
        return
    os.chmod(temporary, stat.S_IMODE(info.st_mode))
    if os.geteuid() == 0:
        with contextlib.suppress(OSError):
            os.chown(temporary, info.st_uid, info.st_gid)


def temporary_beside(path: str | Path) -> Path:
    """Where an output is written before it is renamed into place: a hidden file in the same
    directory (so the rename is atomic, and a run reading that directory skips it)."""
    target = Path(path)
    return target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}.partial")


_RUNS: list[list[tuple[Path, str | Path]]] = []   # the outputs of each open ``one_run`` block


@contextlib.contextmanager
def one_run() -> Iterator[None]:
    """The outputs of one run, all or nothing: each output written in the block waits as its
    temporary file, and they are renamed into place together when the block ends without an
    error; when it ends with one (the --stats file cannot be written after the events file
    was), every temporary file is removed, so no output of the failed run looks complete."""
    pending: list[tuple[Path, str | Path]] = []
    _RUNS.append(pending)
    try:
        yield
    except BaseException:
        _RUNS.pop()
        for temporary, _ in pending:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        raise
    _RUNS.pop()
    done: list[str | Path] = []
    try:
        for temporary, path in pending:
            os.replace(temporary, path)
            done.append(path)
    except OSError as exc:
        for temporary, _ in pending[len(done):]:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        for path in done:   # this run's, renamed a moment ago: not left beside the failure
            with contextlib.suppress(OSError):
                os.unlink(path)
        raise CannotWrite(pending[len(done)][1], exc) from None


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[str]:
    """The path to write ``path``'s content to: a temporary file beside it, renamed into place
    when the block ends without an error and removed when it ends with one, so a failed run
    leaves no file that looks complete (an earlier run's file is left as it was). Inside a
    ``one_run`` block the rename waits for the run's other outputs. Devices and pipes are
    written in place."""
    if _direct(str(path)):
        yield str(path)
        return
    target = check_target(path)
    temporary = temporary_beside(target)
    try:
        yield str(temporary)
        _keep_mode(temporary, target)
        if _RUNS:
            _RUNS[-1].append((temporary, target))   # renamed with the run's other outputs
        else:
            os.replace(temporary, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(exc, OSError) and not isinstance(exc, CannotWrite):
            raise CannotWrite(path, exc) from None
        raise


@contextlib.contextmanager
def atomic_output(path: str | Path, mode: str = "w", encoding: str | None = "utf-8",
                  newline: str | None = None) -> Iterator[IO]:
    """A file object writing ``path`` atomically (``atomic_path``); standard output for "-"."""
    text = "b" not in mode
    if str(path) in ("-", "/dev/stdout"):
        yield sys.stdout if text else sys.stdout.buffer
        return
    with atomic_path(path) as target:
        try:
            handle = open(target, mode, encoding=encoding if text else None, newline=newline)
        except OSError as exc:
            raise CannotWrite(path, exc) from None
        with handle:
            yield handle


def write_atomic(path: str | Path, text: str) -> None:
    """Write a whole text file atomically (``atomic_output``)."""
    with atomic_output(path) as handle:
        handle.write(text)


def format_for(path: str, explicit: str | None = None) -> str:
    if explicit:
        if explicit not in FORMATS:
            raise OutputError(f"unknown format {explicit!r}; use one of {', '.join(FORMATS)}")
        return explicit
    if path in ("-", "/dev/null", "/dev/stdout"):
        return "jsonl"
    suffix = Path(path).suffix.lower()
    by_suffix = {".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl", ".csv": "csv",
                 ".parquet": "parquet", ".pq": "parquet"}
    if suffix not in by_suffix:
        raise OutputError(f"cannot tell the format of {path!r} from its extension; "
                          f"use .jsonl, .csv or .parquet, or give --format")
    return by_suffix[suffix]


def jsonable(event: dict) -> dict:
    out = {}
    for name in NAMES:
        value = event.get(name)
        if isinstance(value, datetime):
            value = value.isoformat().replace("+00:00", "Z")
        out[name] = value
    return out


class EventWriter:
    """Context manager: ``write(batch)`` any number of times, then close."""

    def __init__(self, path: str, fmt: str):
        self.path, self.format = path, fmt
        self.rows = 0
        self._output = None  # the atomic output (atomic_path / atomic_output) being written
        self._handle: IO | None = None
        self._csv = None
        self._parquet = None
        self._pending: dict[str, list] = {}  # Parquet columns waiting for a full row group
        self._pending_rows = 0

    def __enter__(self) -> "EventWriter":
        if self.format == "parquet":
            if self.path == "-":
                raise OutputError("Parquet cannot be written to standard output; give --out FILE.parquet")
            pa = _pyarrow_without_pandas()
            import pyarrow.parquet as pq

            # Each batch's Arrow buffers live only until its row group is written; the system
            # allocator gives them back, where Arrow's default pool keeps them (about 45 MB
            # less peak memory on a 700 MB log).
            pa.set_memory_pool(pa.system_memory_pool())
            self._schema = arrow_schema()
            self._output = atomic_path(self.path)
            target = self._output.__enter__()
            try:
                self._parquet = pq.ParquetWriter(target, self._schema, compression="zstd")
            except OSError as exc:
                self._output.__exit__(type(exc), exc, exc.__traceback__)
                raise CannotWrite(self.path, exc) from None
        else:
            self._output = atomic_output(self.path, "w", "utf-8", newline="")
            self._handle = self._output.__enter__()
            if self.format == "csv":
                self._csv = csv.writer(self._handle)
                self._csv.writerow(NAMES)
        return self

    def write(self, events: EventBatch | Iterable[dict]) -> None:
        batch = events if isinstance(events, EventBatch) else EventBatch(rows=list(events))
        if not len(batch):
            return
        self.rows += len(batch)
        if self._parquet is not None:
            # Rows are written in row groups of ROW_GROUP rows whatever the batches: the Arrow
            # copy stays small, and a small row group costs about as much as a full one (one
            # batch per work unit of a few hundred events made writing twice as slow).
            columns = batch.columns()
            if not self._pending:
                self._pending = {name: [] for name in columns}
            for name, values in columns.items():
                self._pending[name].extend(values)
            self._pending_rows += len(batch)
            while self._pending_rows >= ROW_GROUP:
                self._write_row_group({name: values[:ROW_GROUP] for name, values in self._pending.items()})
                for values in self._pending.values():
                    del values[:ROW_GROUP]
                self._pending_rows -= ROW_GROUP
        elif self._csv is not None:
            for event in batch.rows():
                row = jsonable(event)
                self._csv.writerow([_cell(row[n], KINDS[n]) for n in NAMES])
        else:
            assert self._handle is not None
            write = self._handle.write
            for event in batch.rows():
                write(json.dumps(jsonable(event), ensure_ascii=False))
                write("\n")

    def _write_row_group(self, columns: dict[str, list]) -> None:
        import pyarrow as pa

        self._parquet.write_table(pa.Table.from_pydict(columns, schema=self._schema))

    def __exit__(self, *exc) -> None:
        """Complete the file and rename it into place, or, after an error, remove it."""
        assert self._output is not None
        failure: BaseException | None = None
        if exc[0] is None:
            try:
                if self._parquet is not None:
                    if self._pending_rows:
                        self._write_row_group(self._pending)
                        self._pending, self._pending_rows = {}, 0
                    self._parquet.close()
                elif self._handle is not None:
                    self._handle.flush()
            except BaseException as raised:
                failure = raised
                exc = (type(raised), raised, raised.__traceback__)
        elif self._parquet is not None:
            with contextlib.suppress(Exception):
                self._parquet.close()
        if exc[0] is None:
            self._output.__exit__(None, None, None)
            return
        self._output.__exit__(*exc)  # removes the temporary file
        if failure is not None:
            raise CannotWrite(self.path, failure) if isinstance(failure, OSError) else failure


class _NoPandas(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname == "pandas" or fullname.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def _pyarrow_without_pandas():
    """pyarrow, with its "are these values pandas objects?" check answered without pandas.

    When pandas is installed (the spark and test extras), pyarrow's first ``pa.array()`` imports
    it only to ask that question: 0.25 s and ~50 MB in the process writing Parquet, for event
    rows that are plain lists. The first check is made here with pandas hidden; pyarrow keeps
    that answer for the question, while its real pandas conversions (``to_pandas``) still
    import pandas when someone asks for them. Nothing changes if pandas is already imported.
    """
    import pyarrow as pa

    if "pandas" in sys.modules:
        return pa
    blocker = _NoPandas()
    sys.meta_path.insert(0, blocker)
    try:
        pa.array([], pa.string())
    finally:
        sys.meta_path.remove(blocker)
    return pa


def _cell(value, kind: str) -> str:
    if value is None:
        return ""
    if kind in ("strings", "map"):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def write_events(path: str, events: Iterable[dict], fmt: str | None = None) -> int:
    with EventWriter(path, format_for(path, fmt)) as writer:
        writer.write(events)
        return writer.rows


__all__ = ["CannotWrite", "check_target", "EventWriter", "FORMATS", "OutputError", "atomic_output", "atomic_path", "format_for",
           "io", "jsonable", "one_run",
           "temporary_beside", "write_atomic", "write_events"]
