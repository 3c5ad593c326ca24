"""The --engine/--master/--conf options and the one place a command reads logs with either engine.

The Spark engine is imported only when Spark was chosen, so local runs never pay for pyspark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Iterator, Optional

import typer

from .choices import Engine, value
from .common import Text, stderr

if TYPE_CHECKING:
    from ..core.batches import EventBatch
    from ..core.options import ReadOptions
    from ..core.stats import RunStats

EngineOpt = Annotated[Engine, typer.Option(
    "--engine", help="local (in-process), spark, or auto: Spark for big inputs, Hadoop URLs "
                     "(hdfs://, s3a://, ...) or when --master or --remote is given.")]
MasterOpt = Annotated[Optional[str], typer.Option(
    "--master", help="Spark master URL (local[4], yarn, k8s://..., spark://...); implies Spark.")]
ConfOpt = Annotated[Optional[list[str]], typer.Option(
    "--conf", help="Spark setting KEY=VALUE (repeatable), e.g. spark.executor.memory=4g.")]
RemoteOpt = Annotated[Optional[str], typer.Option(
    "--remote", help="Spark Connect server, sc://HOST:PORT (default $SPARK_REMOTE when Spark runs); implies Spark.")]


def read_with_engine(paths: list[str], options: ReadOptions, engine: str, master: str | None,
                     conf: list[str] | None, progress=None, quiet: bool = False, remote: str | None = None
                     ) -> tuple[Iterator[EventBatch | list[dict]], RunStats]:
    """(batches of events, stats) from the chosen engine; stats are complete after the batches.

    Raises EngineError (a usage error), SparkUnavailable (Spark is required but cannot run here).
    """
    # The reading engine (numpy, the packs, the layouts) is imported when something is read, not for --help.
    from ..engines import local
    from ..engines.choose import choose_engine

    engine = value(engine)
    choice = choose_engine(engine, paths, master, remote=remote)
    if choice.engine == "local":
        if engine == "auto" and not quiet and "above" in choice.reason:
            stderr.print(Text(f"engine: local ({choice.reason})"))
        return local.run(paths, options, progress)
    from ..engines import spark as spark_engine

    settings = spark_engine.parse_conf(conf)
    announce(choice.reason, master, remote, quiet)
    with spark_engine.session(master, settings, remote=remote) as spark:
        events, stats = spark_engine.collect_events(spark, paths, options, order="input")
    return iter([events]), stats


def announce(reason: str, master: str | None, remote: str | None, quiet: bool) -> None:
    if quiet:
        return
    from ..engines.choose import remote_url

    connect = remote_url(remote) if not master else None
    target = f"Spark Connect server {connect}" if connect else f"Spark session ({master})" if master \
        else "Spark session"
    stderr.print(Text(f"engine: spark ({reason}); starting a {target}..."))


__all__ = ["ConfOpt", "EngineOpt", "MasterOpt", "RemoteOpt", "announce", "read_with_engine"]
