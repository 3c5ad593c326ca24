"""The diagnosis of every group on the executors, with the rule code of ``analyze``."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ...core.schema import NAMES


@dataclass
class Diagnosis:
    """Per-group rebalances and findings as DataFrames (diagnosis.REBALANCE_COLUMNS / FINDING_COLUMNS)."""

    rebalances: DataFrame
    findings: DataFrame
    _raw: DataFrame | None = None

    def release(self) -> None:
        if self._raw is not None:
            self._raw.unpersist()


def diagnose_groups(events: DataFrame, config=None) -> Diagnosis:
    """Run the diagnosis of every group on the executors (``groupBy(group).applyInArrow``)
    with the rule code of ``analyze``: ``diagnosis.analyze_group`` on each group's events."""
    from ... import diagnosis
    from ...timeline import clusters

    config = config or diagnosis.AnalysisConfig()
    rebalance_type = pa.struct(list(diagnosis.arrow_schema(diagnosis.REBALANCE_COLUMNS)))
    finding_type = pa.struct(list(diagnosis.arrow_schema(diagnosis.FINDING_COLUMNS)))
    schema = pa.schema([("_kind", pa.string()), ("rebalance", rebalance_type), ("finding", finding_type)])
    ddl = (f"_kind STRING, rebalance STRUCT<{diagnosis.spark_ddl(diagnosis.REBALANCE_COLUMNS)}>, "
           f"finding STRUCT<{diagnosis.spark_ddl(diagnosis.FINDING_COLUMNS)}>")

    # Groups keyed by cluster (timeline/clusters.py), decided on the driver from what each file states.
    keys = (clusters.keying(tuple(r) for r in events.select("source", "cluster", "group").distinct().collect())
            if "cluster" in events.columns else clusters.Keying())   # (a table written before the column)

    def diagnose(table: pa.Table) -> pa.Table:
        rows = table.select(list(NAMES)).to_pylist()
        for row in rows:
            if row["attrs"] is not None:
                row["attrs"] = dict(row["attrs"])
        clusters.apply(rows, keys)
        by_group: dict[str, list[dict]] = {}
        for row in rows:   # one group.id, one group per cluster
            by_group.setdefault(row["group"], []).append(row)
        out = []
        for group_rows in by_group.values():
            rebalances, findings = diagnosis.analyze_group(group_rows, config)
            out += ([{"_kind": "rebalance", "rebalance": r, "finding": None} for r in rebalances]
                    + [{"_kind": "finding", "rebalance": None, "finding": f} for f in findings])
        return pa.Table.from_pylist(out, schema=schema)

    grouped = events.where(F.col("group").isNotNull()).groupBy("group")
    raw = grouped.applyInArrow(diagnose, ddl).persist()
    return Diagnosis(raw.where(F.col("_kind") == "rebalance").select("rebalance.*"),
                     raw.where(F.col("_kind") == "finding").select("finding.*"), raw)


def empty_diagnosis(spark: SparkSession) -> Diagnosis:
    from ... import diagnosis

    return Diagnosis(spark.createDataFrame([], diagnosis.spark_ddl(diagnosis.REBALANCE_COLUMNS)),
                     spark.createDataFrame([], diagnosis.spark_ddl(diagnosis.FINDING_COLUMNS)))
