"""The events of one work unit on their way to a writer: as rows (dicts) or as columns.

The parsing core makes rows. A worker process of the in-process engine sends its rows to the
parent as columns: a pickled column of values is about half the bytes and a third of the
unpickling time of the same events as dicts, and the Parquet writer needs columns anyway, so
the parent (which shares the cores with the workers) no longer rebuilds them. Whichever form a
consumer asks for is made from the other on demand.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from .schema import event_columns, event_rows

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)


class EventBatch:
    __slots__ = ("_rows", "_columns")

    def __init__(self, rows: list[dict] | None = None, columns: dict[str, list] | None = None):
        if (rows is None) == (columns is None):
            raise ValueError("an event batch is made from rows or from columns")
        self._rows = rows
        self._columns = columns

    def __len__(self) -> int:
        return len(self._rows) if self._rows is not None else len(self._columns["line"])  # type: ignore[index]

    def rows(self) -> list[dict]:
        """The events as dicts (the parsing core's form): ts a UTC datetime, attrs a dict."""
        if self._rows is None:
            self._rows = event_rows(self._columns)  # type: ignore[arg-type]
        return self._rows

    def columns(self) -> dict[str, list]:
        """The events as the column lists Arrow reads (``schema.event_columns``)."""
        if self._columns is None:
            self._columns = event_columns(self._rows)  # type: ignore[arg-type]
        return self._columns

    def shift_lines(self, offset: int) -> None:
        """Add ``offset`` to every line number (a later byte range of a file counted from 1)."""
        if not offset:
            return
        if self._rows is not None:
            for event in self._rows:
                event["line"] += offset
        if self._columns is not None:
            self._columns["line"] = [line + offset for line in self._columns["line"]]

    def replace_versions(self, replaced: tuple[str | None, ...], version: str | None) -> None:
        """Give ``version`` to every event whose kafka_version is one of ``replaced``."""
        if not replaced:
            return
        if self._rows is not None:
            for event in self._rows:
                if event["kafka_version"] in replaced:
                    event["kafka_version"] = version
        if self._columns is not None:
            self._columns["kafka_version"] = [version if v in replaced else v
                                              for v in self._columns["kafka_version"]]

    def has_ungrouped_client_lines(self) -> bool:
        """Whether a non-Java client line lacks its group (``handles.resolve`` may fill it)."""
        if self._columns is not None:
            return any(lib and not group for lib, group in zip(self._columns["library"], self._columns["group"]))
        return any(e.get("library") and not e.get("group") for e in self._rows)  # type: ignore[union-attr]

    def times(self):
        """(host, ts in microseconds since the epoch or None) of each event, in order
        (``core.clock.out_of_order``)."""
        if self._columns is not None:
            return zip(self._columns["host"], self._columns["ts"])
        return ((e["host"], None if e["ts"] is None else (e["ts"] - _EPOCH) // _MICROSECOND)
                for e in self._rows)  # type: ignore[union-attr]

    def rows_changed(self) -> None:
        """The rows were changed in place: the columns made from them are stale."""
        if self._rows is not None:
            self._columns = None

    def __reduce__(self):
        # Across processes a batch always travels as columns (see the module docstring).
        return (_from_columns, (self.columns(),))


def _from_columns(columns: dict[str, list]) -> EventBatch:
    return EventBatch(columns=columns)
