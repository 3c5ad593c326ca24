"""The --engine/--master/--conf options and the one place a command reads logs with either engine.

The Spark engine is imported only when Spark was chosen, so local runs never pay for pyspark.
"""

from __future__ import annotations

from typing import Annotated, Iterator, Optional

import typer
from rich.text import Text

from ..core.batches import EventBatch
from ..core.options import ReadOptions
from ..core.stats import RunStats
from ..engines import local
from ..engines.choose import EngineError, choose_engine
from .choices import Engine, value
from .common import stderr

EngineOpt = Annotated[Engine, typer.Option(
    "--engine", help="local (in-process), spark, or auto: Spark for big inputs, Hadoop URLs "
                     "(hdfs://, s3a://, ...) or when --master is given.")]
MasterOpt = Annotated[Optional[str], typer.Option(
    "--master", help="Spark master URL (local[4], yarn, k8s://..., spark://...); implies Spark.")]
ConfOpt = Annotated[Optional[list[str]], typer.Option(
    "--conf", help="Spark setting KEY=VALUE (repeatable), e.g. spark.executor.memory=4g.")]


def read_with_engine(paths: list[str], options: ReadOptions, engine: str, master: str | None,
                     conf: list[str] | None, progress=None, quiet: bool = False
                     ) -> tuple[Iterator[EventBatch | list[dict]], RunStats]:
    """(batches of events, stats) from the chosen engine; stats are complete after the batches.

    Raises EngineError (a usage error) when Spark is required but cannot run.
    """
    engine = value(engine)
    choice = choose_engine(engine, paths, master)
    if choice.engine == "local":
        if engine == "auto" and not quiet and "above" in choice.reason:
            stderr.print(Text(f"engine: local ({choice.reason})"))
        return local.run(paths, options, progress)
    from ..engines import spark as spark_engine

    settings = spark_engine.parse_conf(conf)
    if not quiet:
        stderr.print(Text(f"engine: spark ({choice.reason}); starting a Spark session..."))
    with spark_engine.session(master, settings) as spark:
        events, stats = spark_engine.collect_events(spark, paths, options, order="input")
    return iter([events]), stats


__all__ = ["ConfOpt", "EngineError", "EngineOpt", "MasterOpt", "read_with_engine"]
