"""The Spark session a command runs in: created (classic or Spark Connect), checked reachable, stopped."""

from __future__ import annotations

import os
import socket
import sys
import tempfile
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator
from urllib.parse import urlparse

from pyspark.sql import SparkSession

from ..choose import SparkUnavailable, remote_url
from .errors import _first_line, _is_connection_error, translated_errors


# Runtime SQL settings every session gets (Spark Connect can set only these from the client).
SQL_SETTINGS = {
    "spark.sql.session.timeZone": "UTC",                          # partition dates are UTC days
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",  # pyarrow reads UTC instants
}
CONNECT_DEFAULT_PORT = 15002
REACH_TIMEOUT_SECONDS = 5.0

def create_session(master: str | None = None, conf: dict[str, str] | None = None,
                   app_name: str = "rebalance-doctor", remote: str | None = None) -> SparkSession:
    """A session for the command line: a classic one for ``master`` (local[*], spark://, yarn,
    k8s://), or a Spark Connect one for ``remote`` (``sc://host:port``, or ``$SPARK_REMOTE`` when
    no master is given). UTC session time, Parquet timestamps that pyarrow reads back as UTC
    instants. Raises SparkUnavailable (one line) when the master or server cannot be reached."""
    # pyspark warns about pandas versions on every Arrow job; the engine does not use pandas.
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    conf = dict(conf or {})
    remote = remote or (None if master else remote_url(None))
    if remote:
        check_reachable(remote)
        with translated_errors(remote):
            spark = SparkSession.builder.remote(remote).appName(app_name).getOrCreate()
            for key, value in {**SQL_SETTINGS, **conf}.items():
                try:
                    spark.conf.set(key, value)
                except Exception as exc:  # a static setting: the server's, not the client's
                    if _is_connection_error(exc):
                        raise
                    raise ValueError(f"--conf {key}: cannot be set from a Spark Connect client "
                                     f"({_first_line(exc)}); set it on the server") from None
        return spark
    if master:
        check_reachable(master)
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    settings = {**SQL_SETTINGS, "spark.ui.showConsoleProgress": "false"}
    if "spark.driver.extraJavaOptions" not in conf:
        # Spark's default log4j profile prints INFO/WARN start-up lines meant for operators, and
        # a failed task's Java stack trace; the command says what went wrong in one line.
        settings["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile={_quiet_log4j()}"
    settings.update(conf)
    _default_python(settings)
    for key, value in settings.items():
        builder = builder.config(key, value)
    with translated_errors(master or "local"):
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _default_python(settings: dict[str, str]) -> None:
    """The Python workers run the interpreter running this command unless told otherwise.

    pyspark starts them with ``$PYSPARK_PYTHON`` or else ``python3`` from the PATH, which from
    an unactivated install (pipx, cron, CI) is another Python without the dependencies.
    ``--conf spark.pyspark.python=...`` (what spark-submit takes) is honoured too.
    """
    if settings.get("spark.pyspark.python"):
        os.environ["PYSPARK_PYTHON"] = settings["spark.pyspark.python"]
    elif not os.environ.get("PYSPARK_PYTHON"):
        os.environ["PYSPARK_PYTHON"] = sys.executable


def check_reachable(url: str) -> None:
    """A quick TCP check of a ``spark://`` master (every host of an HA list) or an ``sc://``
    server: a refused or unanswered connection is one line now, not minutes of retries."""
    parsed = urlparse(url)
    if parsed.scheme not in ("spark", "sc"):
        return
    what = "Spark master" if parsed.scheme == "spark" else "Spark Connect server"
    hosts = (url.split("://", 1)[1].split("/", 1)[0].split(";", 1)[0]).split(",")
    problems = []
    for host_port in hosts:
        host, _, port = host_port.rpartition(":")
        if not host:
            host, port = port, str(CONNECT_DEFAULT_PORT if parsed.scheme == "sc" else 7077)
        host = host.strip("[]")
        try:
            with socket.create_connection((host, int(port)), timeout=REACH_TIMEOUT_SECONDS):
                return
        except ConnectionRefusedError:
            problems.append(f"{host}:{port} refused the connection")
        except socket.timeout:
            problems.append(f"{host}:{port} did not answer within {REACH_TIMEOUT_SECONDS:.0f}s")
        except (OSError, ValueError) as exc:
            problems.append(f"{host}:{port}: {getattr(exc, 'strerror', None) or exc}")
    raise SparkUnavailable(f"cannot reach the {what} at {url}: {'; '.join(problems)}")


def _quiet_log4j() -> str:
    path = Path(tempfile.gettempdir()) / "rebalance-doctor-log4j2-v2.properties"
    if not path.is_file():
        # Executor and TaskSetManager log a failed task with its Java stack trace at ERROR/WARN:
        # the command reports the failure itself (translated_errors).
        text = ("rootLogger.level = error\nrootLogger.appenderRef.stderr.ref = console\n"
                "appender.console.type = Console\nappender.console.name = console\n"
                "appender.console.target = SYSTEM_ERR\nappender.console.layout.type = PatternLayout\n"
                "appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n\n"
                "logger.executor.name = org.apache.spark.executor.Executor\nlogger.executor.level = off\n"
                "logger.tasks.name = org.apache.spark.scheduler.TaskSetManager\nlogger.tasks.level = off\n"
                "logger.client.name = org.apache.spark.deploy.client.StandaloneAppClient$ClientEndpoint\n"
                "logger.client.level = off\n"
                "logger.backend.name = org.apache.spark.scheduler.cluster.StandaloneSchedulerBackend\n"
                "logger.backend.level = off\n")
        staging = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        staging.write_text(text, encoding="utf-8")
        os.replace(staging, path)
    return str(path)


def is_connect(spark: SparkSession) -> bool:
    """Whether the session is a Spark Connect client (no SparkContext, no JVM here)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


@contextmanager
def session(master: str | None = None, conf: dict[str, str] | None = None,
            remote: str | None = None) -> Iterator[SparkSession]:
    """A session for one command: an already active one (spark-submit, a notebook, tests) is used
    and left running; one started here is stopped at the end. Environment failures inside become
    SparkUnavailable."""
    active = SparkSession.getActiveSession()
    spark = active or create_session(master, conf, remote=remote)
    try:
        with translated_errors(remote or master or "the Spark session"):
            yield spark
    finally:
        if active is None:
            try:
                spark.stop()
            except Exception:  # a server that went away: nothing left to stop
                pass


def parse_conf(items: list[str] | None) -> dict[str, str]:
    """``--conf k=v`` items as a dict; raises ValueError on an item without '='."""
    conf = {}
    for item in items or []:
        if "=" not in item:
            raise ValueError(f"--conf takes KEY=VALUE, got {item!r}")
        key, value = item.split("=", 1)
        conf[key.strip()] = value
    return conf
