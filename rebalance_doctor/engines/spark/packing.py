"""How a unit's events travel from the read to their users: packed Arrow IPC rows, unpacked with their fixes."""

from __future__ import annotations

import json

import pyarrow as pa

from ...core import handles
from ...core.schema import arrow_schema, event_columns


UNIT_COLUMN = "_unit"
REPORT_COLUMN = "_report"
EVENTS_COLUMN = "_events"
EVENT_BATCH_ROWS = 8192


def _output_schema() -> pa.Schema:
    return pa.schema([(UNIT_COLUMN, pa.int64()), (REPORT_COLUMN, pa.string()), (EVENTS_COLUMN, pa.binary())])


def _output_ddl() -> str:
    return f"`{UNIT_COLUMN}` BIGINT, `{REPORT_COLUMN}` STRING, `{EVENTS_COLUMN}` BINARY"


def _events_batch(events: list[dict], unit: int, schema: pa.Schema) -> pa.RecordBatch:
    """One row holding the events as an Arrow IPC stream (LZ4): the JVM caches a few opaque
    values per unit instead of building (and compressing) a columnar cache of every event,
    which was most of its executor threads' CPU in a run; ``_unpacked`` opens them where they
    are used."""
    batch = pa.RecordBatch.from_pydict(event_columns(events), schema=arrow_schema())
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema, options=pa.ipc.IpcWriteOptions(compression="lz4")) as writer:
        writer.write_batch(batch)
    packed = sink.getvalue().to_pybytes()
    return pa.RecordBatch.from_pydict({UNIT_COLUMN: [unit], REPORT_COLUMN: [None], EVENTS_COLUMN: [packed]},
                                      schema=schema)


def _report_batch(unit: int, report: dict, schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({UNIT_COLUMN: [unit], REPORT_COLUMN: [json.dumps(report)],
                                       EVENTS_COLUMN: [None]}, schema=schema)


Fix = tuple[int, "tuple[str | None, ...]", "str | None", "dict[str | None, str]"]
"""What the accounting changes in a unit's events: (line offset, the Kafka versions they carry
that are replaced, the one they take (see versions.for_later_range), and the group each handle's
ungrouped client lines take from the file's other ranges (see handles.carried))."""


def _unpacked(packed, fix: Fix | None) -> pa.RecordBatch:
    """A unit's packed events with their line offset and Kafka version applied."""
    import pyarrow.compute as pc

    batch = pa.ipc.open_stream(packed).read_next_batch()
    if fix is None:
        return batch
    offset, replaced, version, groups = fix
    if groups:
        batch = _with_handle_groups(batch, groups)
    if offset:
        batch = batch.set_column(batch.schema.get_field_index("line"), "line", pc.add(batch.column("line"), offset))
    if replaced:
        carried = batch.column("kafka_version")
        # skip_nulls=False: a None among the replaced versions matches the events carrying none.
        taking = pc.is_in(carried, value_set=pa.array(replaced, pa.string()), skip_nulls=False)
        index = batch.schema.get_field_index("kafka_version")
        batch = batch.set_column(index, "kafka_version",
                                 pc.if_else(taking, pa.scalar(version, pa.string()), carried))
    return batch


def _with_handle_groups(batch: pa.RecordBatch, groups: dict[str | None, str]) -> pa.RecordBatch:
    """Fill the ungrouped client lines of a range of a file read in ranges (rare: a client log
    bigger than the split size), row by row as the in-process engine does."""
    rows = batch.to_pylist()
    filled = 0
    for row in rows:
        if handles.needs_group(row) and row["client"] in groups:
            handles.fill(row, groups[row["client"]])
            filled += 1
    return pa.RecordBatch.from_pylist(rows, schema=batch.schema) if filled else batch
