"""What Spark raises when the environment is wrong, as one line (``SparkUnavailable``)."""

from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Iterator

from .. import shipping
from ..choose import SparkUnavailable


_MISSING_MODULE = re.compile(r"No module named '([\w.]+)'")
_CANNOT_RUN = re.compile(r'Cannot run program "([^"]+)"')
_VERSION_MISMATCH = re.compile(r"Python in worker has different version:? \(?([\d., ]+)\)? than that in driver:? ([\d.]+)")
RECIPE = "docs/spark.md, \"Dependencies on executors\""


class _Translated(Exception):
    pass


@contextmanager
def translated_errors(where: str) -> Iterator[None]:
    """Turn what Spark raises when the environment is wrong into SparkUnavailable (one line);
    anything else is raised unchanged (a bug: the CLI reports it as internal)."""
    try:
        yield
    except SparkUnavailable:
        raise
    except Exception as exc:
        message = environment_problem(exc, where)
        if message is None:
            raise
        raise SparkUnavailable(message) from None


def environment_problem(exc: BaseException, where: str) -> str | None:
    """One line for an environment failure inside a Spark exception, or None."""
    text = str(exc)
    module = _MISSING_MODULE.search(text)
    if module:
        name = module.group(1)
        if name.split(".")[0] == shipping.PACKAGE:
            return (f"the executors could not import the rebalance_doctor code the driver shipped "
                    f"({name}); see {RECIPE}")
        return (f"the executors' Python lacks the module {name!r}: install the dependencies there, "
                f"or ship an environment with --archives ({RECIPE})")
    package = re.search(r"PACKAGE_NOT_INSTALLED\] (\w+)", text)
    if package:
        return (f"{package.group(1)} is not installed where the driver runs "
                f"(pip install 'rebalance-doctor[spark]')")
    mismatch = _VERSION_MISMATCH.search(text)
    if mismatch or "PYTHON_VERSION_MISMATCH" in text:
        detail = (f" ({mismatch.group(1).replace(', ', '.')} on the executors, {mismatch.group(2)} here)"
                  if mismatch else "")
        return (f"the executors run another Python version than the driver{detail}: set PYSPARK_PYTHON "
                f"to a Python of the driver's version ({RECIPE})")
    program = _CANNOT_RUN.search(text)
    if program:
        return (f"the executors cannot start Python {program.group(1)!r}: set PYSPARK_PYTHON "
                f"(or spark.pyspark.python) to the executors' Python ({RECIPE})")
    if "UnsupportedClassVersionError" in text:
        return "the Java runtime is too old for Spark 4 (it needs Java 17 or 21; set JAVA_HOME)"
    if "Java gateway process exited" in text or "JAVA_GATEWAY_EXITED" in text:
        return "Java could not start Spark (check JAVA_HOME and that Java 17 or 21 runs)"
    if "All masters are unresponsive" in text or "Master removed our application" in text:
        return f"the Spark master at {where} stopped answering or removed the application"
    if _is_connection_error(exc):
        return f"cannot reach the Spark Connect server at {where}: {_grpc_detail(text)}"
    if "SparkContext was shut down" in text or "Cannot call methods on a stopped SparkContext" in text:
        return f"the Spark application on {where} was stopped (its master or executors went away)"
    return None


def _is_connection_error(exc: BaseException) -> bool:
    text = str(exc)
    return type(exc).__name__ in ("SparkConnectGrpcException", "RetriesExceeded", "_InactiveRpcError") and (
        "UNAVAILABLE" in text or "Connection refused" in text or "failed to connect" in text.lower()
        or "Deadline Exceeded" in text or "RetriesExceeded" in type(exc).__name__)


def _grpc_detail(text: str) -> str:
    for needle in ("Connection refused", "Deadline Exceeded", "failed to connect to all addresses"):
        if needle in text:
            return needle.lower()
    return _first_line_of(text)


def _first_line_of(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else ""

def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
