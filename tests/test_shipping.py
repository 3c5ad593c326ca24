"""The zip the driver ships to executors (engines/shipping.py), and the one-line environment
errors; no JVM here (tests/test_spark_cluster.py runs them on real clusters)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile

import pytest
from typer.testing import CliRunner

from conftest import REPO
from rebalance_doctor.engines import shipping
from rebalance_doctor.engines.choose import SparkUnavailable, java_major, spark_available

INCIDENT = REPO / "fixtures" / "incidents" / "poll-timeout-storm"


def test_the_zip_alone_imports_the_tool_reads_logs_and_runs_the_rules(tmp_path):
    """A Python with the dependencies and only the zip on its path (an executor) gives the
    in-process engine's events and findings; the data files (triggers, thresholds) are read
    from inside the zip, the packs from where the driver's shipment puts them."""
    archive = shipping.package_zip(tmp_path)
    names = zipfile.ZipFile(archive).namelist()
    assert "rebalance_doctor/patterns/layouts.toml" in names and "rebalance_doctor/timeline/triggers.toml" in names
    assert "rebalance_doctor/core/reader.pyc" in names  # bytecode beside the source
    script = (
        "import json, rebalance_doctor\n"
        "from rebalance_doctor.engines.local import read_events\n"
        "from rebalance_doctor.core.options import ReadOptions\n"
        "from rebalance_doctor.diagnosis import analyze_events\n"
        "from rebalance_doctor.rules.config import load\n"
        f"events, _ = read_events([{str(INCIDENT)!r}], ReadOptions())\n"
        "findings = [f.rule for f in analyze_events(events, load(None)).findings]\n"
        "print(json.dumps({'file': rebalance_doctor.__file__, 'events': len(events), 'findings': findings}))\n")
    env = {**os.environ, "PYTHONPATH": str(archive), "REBALANCE_DOCTOR_PATTERNS": str(REPO / "patterns"),
           "REBALANCE_DOCTOR_CACHE": "off"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    shipped = json.loads(done.stdout)
    assert shipped["file"].startswith(str(archive))

    from rebalance_doctor.diagnosis import analyze_events
    from rebalance_doctor.core.options import ReadOptions
    from rebalance_doctor.engines.local import read_events
    from rebalance_doctor.rules.config import load

    events, _ = read_events([str(INCIDENT)], ReadOptions())
    assert shipped["events"] == len(events) > 100
    assert shipped["findings"] == [f.rule for f in analyze_events(events, load(None)).findings] != []


def test_a_changed_package_is_zipped_anew_and_the_same_one_is_not(tmp_path):
    package = tmp_path / "src" / "rebalance_doctor"
    shutil.copytree(REPO / "rebalance_doctor", package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "patterns", tmp_path / "src" / "patterns")
    first = shipping.package_zip(tmp_path / "cache", package)
    assert shipping.package_zip(tmp_path / "cache", package) == first
    (package / "engines" / "local.py").write_text((package / "engines" / "local.py").read_text() + "\n# edited\n")
    second = shipping.package_zip(tmp_path / "cache", package)
    assert second != first and second.is_file() and first.is_file()


def test_the_probe_names_what_an_executor_lacks():
    found = shipping.probe()
    assert found["python"] == sys.executable and found["missing"] == []
    assert found["executor"].startswith("pid-")  # not under a Spark executor
    assert json.loads(shipping.probe_json())["version"] == found["version"]


@pytest.mark.parametrize("text, expected", [
    ("org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
     "ModuleNotFoundError: No module named 'pyarrow'\n\tat org.apache.spark.api.python.BasePythonRunner",
     "the executors' Python lacks the module 'pyarrow': install the dependencies there, or ship an environment "
     "with --archives (docs/spark.md, \"Dependencies on executors\")"),
    ("ModuleNotFoundError: No module named 'rebalance_doctor.engines'",
     "the executors could not import the rebalance_doctor code the driver shipped (rebalance_doctor.engines); "
     "see docs/spark.md, \"Dependencies on executors\""),
    ('java.io.IOException: Cannot run program "/opt/venv/bin/python": error=2, No such file or directory',
     "the executors cannot start Python '/opt/venv/bin/python': set PYSPARK_PYTHON (or spark.pyspark.python) "
     "to the executors' Python (docs/spark.md, \"Dependencies on executors\")"),
    ("[PYTHON_VERSION_MISMATCH] Python in worker has different version: 3.9 than that in driver: 3.11, PySpark "
     "cannot run with different minor versions.",
     "the executors run another Python version than the driver (3.9 on the executors, 3.11 here): set "
     "PYSPARK_PYTHON to a Python of the driver's version (docs/spark.md, \"Dependencies on executors\")"),
    ("Job aborted. Reason: Application has been killed. Reason: All masters are unresponsive! Giving up.",
     "the Spark master at spark://h:7077 stopped answering or removed the application"),
    ("ZeroDivisionError: division by zero", None),
])
def test_spark_failures_of_the_environment_become_one_line(text, expected):
    from rebalance_doctor.engines.spark import environment_problem

    assert environment_problem(RuntimeError(text), "spark://h:7077") == expected


def test_java_too_old_or_missing_is_an_environment_error_with_exit_5(tmp_path, monkeypatch):
    old = tmp_path / "jdk-11"
    (old / "bin").mkdir(parents=True)
    (old / "bin" / "java").write_text("#!/bin/sh\nexit 1\n")
    (old / "release").write_text('JAVA_VERSION="11.0.22"\n')
    assert java_major(str(old / "bin" / "java")) == 11
    monkeypatch.setenv("JAVA_HOME", str(old))
    assert "Java 11" in spark_available() and "too old" in spark_available()
    assert spark_available(remote=True) is None  # a Connect client needs no Java

    from rebalance_doctor.cli.app import app

    result = CliRunner().invoke(app, ["events", str(INCIDENT), "--engine", "spark", "-o", str(tmp_path / "x.jsonl")])
    assert result.exit_code == 5, result.output
    assert result.output.strip().splitlines() == [
        f"error: --engine spark: Java 11 at {old / 'bin' / 'java'} is too old for Spark 4 (it needs Java 17 or 21; "
        "set JAVA_HOME)"]
    assert not (tmp_path / "x.jsonl").exists()
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    missing = CliRunner().invoke(app, ["batch", str(INCIDENT), "--out", str(tmp_path / "out")])
    assert missing.exit_code == 5 and "no Java runtime found" in missing.output
    assert not (tmp_path / "out").exists()


def test_master_and_remote_together_are_a_usage_error(tmp_path):
    from rebalance_doctor.cli.app import app

    for command in (["events", str(INCIDENT)], ["batch", str(INCIDENT), "--out", str(tmp_path / "o")]):
        result = CliRunner().invoke(app, [*command, "--master", "local[1]", "--remote", "sc://127.0.0.1:1"])
        assert result.exit_code == 2 and "exclude each other" in result.output, result.output
    local = CliRunner().invoke(app, ["events", str(INCIDENT), "--engine", "local", "--remote", "sc://127.0.0.1:1"])
    assert local.exit_code == 2 and "--remote needs --engine spark" in local.output


def test_spark_remote_alone_does_not_send_a_small_incident_to_spark(monkeypatch):
    from rebalance_doctor.engines.choose import choose_engine

    monkeypatch.setenv("SPARK_REMOTE", "sc://127.0.0.1:1")
    assert choose_engine("auto", [str(INCIDENT)]).engine == "local"
    assert choose_engine("auto", [str(INCIDENT)], remote="sc://127.0.0.1:1").engine == "spark"
    with pytest.raises(SparkUnavailable):
        monkeypatch.setenv("JAVA_HOME", "/nowhere")
        monkeypatch.setattr("rebalance_doctor.engines.choose.CONNECT_MODULES", ("no_such_module_here",))
        choose_engine("spark", [str(INCIDENT)], remote="sc://127.0.0.1:1")
