"""The diagnosis of every group on the executors, with the rule code of ``analyze``."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ...core.schema import NAMES


@dataclass
class Diagnosis:
    """Per-group rebalances and findings as DataFrames (analysis.REBALANCE_COLUMNS / FINDING_COLUMNS)."""

    rebalances: DataFrame
    findings: DataFrame
    _raw: DataFrame | None = None

    def release(self) -> None:
        if self._raw is not None:
            self._raw.unpersist()


def diagnose_groups(events: DataFrame, config=None) -> Diagnosis:
    """Run the diagnosis of every group on the executors (``groupBy(group).applyInArrow``)
    with the rule code of ``analyze``: ``analysis.analyze_group`` on each group's events."""
    from ... import analysis

    config = config or analysis.AnalysisConfig()
    rebalance_type = pa.struct(list(analysis.arrow_schema(analysis.REBALANCE_COLUMNS)))
    finding_type = pa.struct(list(analysis.arrow_schema(analysis.FINDING_COLUMNS)))
    schema = pa.schema([("_kind", pa.string()), ("rebalance", rebalance_type), ("finding", finding_type)])
    ddl = (f"_kind STRING, rebalance STRUCT<{analysis.spark_ddl(analysis.REBALANCE_COLUMNS)}>, "
           f"finding STRUCT<{analysis.spark_ddl(analysis.FINDING_COLUMNS)}>")

    def diagnose(table: pa.Table) -> pa.Table:
        rows = table.select(list(NAMES)).to_pylist()
        for row in rows:
            if row["attrs"] is not None:
                row["attrs"] = dict(row["attrs"])
        rebalances, findings = analysis.analyze_group(rows, config)
        out = ([{"_kind": "rebalance", "rebalance": r, "finding": None} for r in rebalances]
               + [{"_kind": "finding", "rebalance": None, "finding": f} for f in findings])
        return pa.Table.from_pylist(out, schema=schema)

    grouped = events.where(F.col("group").isNotNull()).groupBy("group")
    raw = grouped.applyInArrow(diagnose, ddl).persist()
    return Diagnosis(raw.where(F.col("_kind") == "rebalance").select("rebalance.*"),
                     raw.where(F.col("_kind") == "finding").select("finding.*"), raw)


def empty_diagnosis(spark: SparkSession) -> Diagnosis:
    from ... import analysis

    return Diagnosis(spark.createDataFrame([], analysis.spark_ddl(analysis.REBALANCE_COLUMNS)),
                     spark.createDataFrame([], analysis.spark_ddl(analysis.FINDING_COLUMNS)))
