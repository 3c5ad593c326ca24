"""The Spark engine on real cluster managers on 127.0.0.1: a standalone master and worker, and a
Spark Connect server, all from the pyspark package (tests/clusters.py).

The executors' Python is a separate virtual environment with the dependencies and without the
project: every run must ship the tool itself. Each test proves the work ran on the cluster (the
accounting's executor ids and the executors' Python), and compares its rows with the in-process
engine's. The driver is the command line in a subprocess (one SparkContext per process).
JVM services start once per test session and are stopped by their pids.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import clusters
from conftest import REPO
from rebalance_doctor.core.options import ReadOptions
from rebalance_doctor.engines.choose import spark_available
from rebalance_doctor.engines.local import read_events

INCIDENTS = REPO / "fixtures" / "incidents"
CHOSEN = ("poll-timeout-storm", "membership-flapping")
CLUSTER_CONF = ["--conf", f"spark.driver.host={clusters.LOOPBACK}", "--conf", f"spark.driver.bindAddress={clusters.LOOPBACK}",
                "--conf", "spark.ui.enabled=false", "--conf", "spark.executor.cores=1",
                "--conf", "spark.executor.memory=512m", "--conf", "spark.cores.max=2",
                "--conf", "spark.driver.memory=768m"]
TIMEOUT = 600  # a hang guard per command, not a timing assertion

pytestmark = [pytest.mark.spark,
              pytest.mark.skipif(bool(spark_available()), reason=f"Spark cannot run here: {spark_available()}")]


@pytest.fixture(scope="session")
def cluster_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cluster")


@pytest.fixture(scope="session")
def wheelhouse(cluster_dir) -> Path:
    given = os.environ.get("RD_WHEELHOUSE")
    if given and Path(given).is_dir():
        return Path(given)
    return clusters.build_wheelhouse(cluster_dir / "wheelhouse")


@pytest.fixture(scope="session")
def executor_python(wheelhouse, cluster_dir) -> Path:
    """The executors' Python: the dependencies, not the project."""
    python = clusters.make_venv(cluster_dir / "executors-venv", wheelhouse, list(clusters.EXECUTOR_REQUIREMENTS))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    check = subprocess.run([str(python), "-c", "import rebalance_doctor"], capture_output=True, cwd="/", env=env)
    assert check.returncode != 0, "the executors' venv must not have the project"
    return python


@pytest.fixture(scope="session")
def standalone(cluster_dir):
    logs = cluster_dir / "logs"
    logs.mkdir(exist_ok=True)
    master = clusters.start_master(logs)
    services = [master]
    try:
        services.append(clusters.start_worker(master, logs))
        yield clusters.master_url(master), services
    finally:
        for service in reversed(services):
            service.stop()


@pytest.fixture(scope="session")
def connect_url(standalone, executor_python, cluster_dir):
    master = standalone[1][0]
    server = clusters.start_connect_server(master, cluster_dir / "logs", executor_python)
    try:
        yield f"sc://{clusters.LOOPBACK}:{server.ports['grpc']}"
    finally:
        server.stop()


@pytest.fixture
def archive(tmp_path) -> Path:
    root = tmp_path / "archive"
    for name in CHOSEN:
        shutil.copytree(INCIDENTS / name, root / name)
    return root


def cli(args: list[str], executor_python: Path | None, cwd: Path | None = None, extra_env: dict | None = None
        ) -> subprocess.CompletedProcess:
    env = clusters.loopback_env({"PYTHONPATH": str(REPO), "TZ": os.environ.get("TZ", "UTC"), **(extra_env or {})})
    if executor_python is not None:
        env["PYSPARK_PYTHON"] = str(executor_python)
    return subprocess.run([sys.executable, "-m", "rebalance_doctor.cli", *args], capture_output=True, text=True,
                          env=env, cwd=cwd or REPO, timeout=TIMEOUT, stdin=subprocess.DEVNULL)


def ran_on_the_cluster(stats: dict, python: Path | str) -> None:
    """The accounting shows executors of the cluster (not the driver of a local run), with the
    executors' Python."""
    executors = stats["executors"]
    assert executors, stats
    assert all(e["executor"] != "driver" for e in executors), executors
    assert {e["python"] for e in executors} == {str(python)}, executors
    assert sum(e["units"] for e in executors) >= stats["files_read"]


def event_rows(events: list[dict]) -> list[tuple]:
    return sorted((str(e["ts"]), e["source"], e["line"], e["event"], e["group"], e["message"]) for e in events)


def parquet_rows(table_dir: Path) -> list[tuple]:
    from rebalance_doctor.core.schema import NAMES

    table = pq.read_table(table_dir)
    rows = table.select(list(NAMES)).to_pylist()
    return event_rows(rows)


# ---------------------------------------------------------------- standalone


def test_events_and_analyze_on_a_standalone_cluster_give_the_in_process_rows(standalone, executor_python, tmp_path):
    master = standalone[0]
    incident = INCIDENTS / CHOSEN[0]
    local = cli(["events", str(incident), "--engine", "local", "-o", str(tmp_path / "local.jsonl"), "-q"], None)
    assert local.returncode == 0, local.stderr
    done = cli(["events", str(incident), "--master", master, *CLUSTER_CONF, "-o", str(tmp_path / "cluster.jsonl"),
                "--stats", str(tmp_path / "stats.json"), "-q"], executor_python)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "cluster.jsonl").read_text() == (tmp_path / "local.jsonl").read_text()
    ran_on_the_cluster(json.loads((tmp_path / "stats.json").read_text()), executor_python)
    assert "spark executors:" in done.stderr and "Traceback" not in done.stderr

    reports = {}
    for name, args, python in (("local", ["--engine", "local"], None),
                               ("cluster", ["--master", master, *CLUSTER_CONF], executor_python)):
        result = cli(["analyze", str(incident), *args, "--format", "json", "-q"], python)
        assert result.returncode in (0, 1), result.stderr[-3000:]
        reports[name] = json.loads(result.stdout)
    assert reports["cluster"]["findings"] == reports["local"]["findings"] and reports["local"]["findings"]


def test_batch_on_a_standalone_cluster_reruns_incrementally_and_after_a_pack_change(standalone, executor_python,
                                                                                   archive, tmp_path):
    master = standalone[0]
    out = tmp_path / "out"

    def batch(*extra):
        result = cli(["batch", str(archive), "--out", str(out), "--master", master, *CLUSTER_CONF,
                      "--format", "json", *extra], executor_python)
        assert result.returncode == 0, result.stderr[-3000:]
        assert "batch: " in result.stderr  # progress on stderr
        return json.loads(result.stdout)

    first = batch()
    assert first["files"] == {"new": first["read"]["files_read"]}
    ran_on_the_cluster(first["read"], executor_python)
    assert parquet_rows(out / "events") == event_rows(read_events([str(archive)], ReadOptions())[0])

    grown = archive / CHOSEN[0] / "node2.log"
    original = grown.read_text(encoding="utf-8")
    grown.write_text(original + original, encoding="utf-8")
    second = batch()
    assert second["files"] == {"appended": 1, "unchanged": first["read"]["files_read"] - 1}
    ran_on_the_cluster(second["read"], executor_python)
    assert parquet_rows(out / "events") == event_rows(read_events([str(archive)], ReadOptions())[0])

    # A pack given with --packs changes what the packs produce: every file is read again and its
    # earlier events are replaced, so the table is exactly one read with the new packs.
    pack = tmp_path / "packs" / "extra.toml"
    pack.parent.mkdir()
    pack.write_text(
        'pack = "extra"\nversion = "9.9"\ncomponent = "broker"\nscan = ["Wobbling group"]\n\n'
        '[patterns."extra.wobble"]\nevent = "rebalance.prepare"\ngate = "Wobbling group"\ndoc = "test"\n'
        '[[patterns."extra.wobble".variants]]\nkafka = ">=2.4"\nlogger = "kafka.coordinator.group.GroupCoordinator"\n'
        'regex = \'Wobbling group (?P<group>\\S+)\'\nsamples = []\n', encoding="utf-8")
    third = batch("--packs", str(pack.parent))
    assert third["files"] == {"outdated": first["read"]["files_read"]}
    assert third["packs"].get("extra") == "9.9" and third["stale"] == []
    with_pack = read_events([str(archive)], ReadOptions(packs=[pack.parent]))[0]
    assert parquet_rows(out / "events") == event_rows(with_pack)
    manifest = pq.read_table(out / "manifest").to_pylist()
    latest = {}
    for row in sorted(manifest, key=lambda r: r["run"]):
        latest[row["key"]] = row
    assert {r["packs_digest"] for r in latest.values()} == {third["packs_digest"]}
    assert {r["schema"] for r in latest.values()} == {third["schema"]}
    assert sorted(r["run"] for r in pq.read_table(out / "runs").to_pylist()) == [1, 2, 3]


def test_an_executor_without_a_dependency_is_one_line_and_exit_5(standalone, cluster_dir, tmp_path):
    bare = cluster_dir / "bare-venv"
    if not bare.exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120)
    out = tmp_path / "events.jsonl"
    result = cli(["events", str(INCIDENTS / CHOSEN[0]), "--master", standalone[0], *CLUSTER_CONF, "-o", str(out), "-q"],
                 bare / "bin" / "python")
    assert result.returncode == 5, result.stderr[-3000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "lacks dateutil, numpy, pyarrow, regex:" in errors[0], errors
    assert "Dependencies on executors" in errors[0] and str(bare / "bin" / "python") in errors[0]
    assert "Traceback" not in result.stderr and "\tat " not in result.stderr
    assert not out.exists()


def test_unreachable_master_and_connect_server_and_no_worker_are_one_line_and_exit_5(standalone, cluster_dir,
                                                                                    tmp_path):
    port = clusters.free_port()  # nothing listens there
    for args in (["--master", f"spark://{clusters.LOOPBACK}:{port}"], ["--remote", f"sc://{clusters.LOOPBACK}:{port}"]):
        out = tmp_path / "x.jsonl"
        result = cli(["events", str(INCIDENTS / CHOSEN[0]), *args, "-o", str(out)], None)
        assert result.returncode == 5, result.stderr
        assert result.stderr.strip().splitlines()[-1].startswith("error: cannot reach the Spark")
        assert "refused the connection" in result.stderr and "Traceback" not in result.stderr
        assert not out.exists()
        refused = cli(["batch", str(INCIDENTS / CHOSEN[0]), "--out", str(tmp_path / "batch"), *args], None)
        assert refused.returncode == 5 and not (tmp_path / "batch").exists(), refused.stderr

    # A master that no worker ever registers with: the first job would wait for ever.
    logs = cluster_dir / "logs-lonely"
    logs.mkdir(exist_ok=True)
    lonely = clusters.start_master(logs)
    try:
        out = tmp_path / "batch-lonely"
        result = cli(["batch", str(INCIDENTS / CHOSEN[0]), "--out", str(out), "--master", clusters.master_url(lonely),
                      *CLUSTER_CONF, "--conf", "spark.rebalanceDoctor.executorWait=8s"], None)
    finally:
        lonely.stop()
    assert result.returncode == 5, result.stderr[-3000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "no executor ran a task within 8s" in errors[0], result.stderr[-3000:]
    assert "Traceback" not in result.stderr and not out.exists()


# ---------------------------------------------------------------- spark-submit and the archive recipe


@pytest.fixture(scope="session")
def wheel_python(wheelhouse, cluster_dir) -> Path:
    """A venv with the built wheel installed (not editable, no source tree): a user's install."""
    return clusters.make_venv(cluster_dir / "wheel-venv", wheelhouse,
                              [str(clusters.project_wheel(wheelhouse)), *clusters.DRIVER_EXTRAS])


def spark_submit(args: list[str], driver_python: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = clusters.loopback_env({"TZ": os.environ.get("TZ", "UTC")})
    env.pop("PYTHONPATH", None)
    # spark.pyspark.python would be the driver's Python too: the driver's is named on its own.
    command = [str(clusters.spark_home() / "bin" / "spark-submit"),
               "--conf", f"spark.pyspark.driver.python={driver_python}", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd, timeout=TIMEOUT,
                          stdin=subprocess.DEVNULL)


def job_script(python: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # a PYTHONPATH would name the source tree
    found = subprocess.run([str(python), "-c", "import rebalance_doctor.spark_job as j; print(j.__file__)"],
                           capture_output=True, text=True, check=True, cwd="/", env=env)
    path = found.stdout.strip()
    assert "site-packages" in path, path  # the installed wheel, not the source tree
    return path


def local_jsonl(incident: Path, tmp_path: Path) -> str:
    """The in-process engine's JSONL of the same input, through the command line."""
    out = tmp_path / "in-process.jsonl"
    done = cli(["events", str(incident), "--engine", "local", "-o", str(out), "-q"], None)
    assert done.returncode == 0, done.stderr
    return out.read_text(encoding="utf-8")


def test_spark_submit_local_with_the_built_wheel(wheel_python, tmp_path):
    incident = INCIDENTS / CHOSEN[0]
    out = tmp_path / "events.jsonl"
    result = spark_submit(["--master", "local[2]", "--conf", "spark.ui.enabled=false",
                           "--conf", f"spark.pyspark.python={wheel_python}", job_script(wheel_python),
                           "events", str(incident), "-o", str(out), "--stats", str(tmp_path / "stats.json"), "-q"],
                          wheel_python, tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert out.read_text(encoding="utf-8") == local_jsonl(incident, tmp_path)
    assert {e["executor"] for e in json.loads((tmp_path / "stats.json").read_text())["executors"]} == {"driver"}


def test_the_archive_recipe_through_spark_submit_on_the_standalone_cluster(standalone, executor_python, wheel_python,
                                                                          cluster_dir, tmp_path):
    """docs/spark.md's recipe: the executors' environment packed with venv-pack and shipped with
    --archives; the executors run ./rd/bin/python from the archive, the tool ships itself."""
    packed = cluster_dir / "rd.tar.gz"
    if not packed.exists():
        clusters.run([sys.executable, "-m", "venv_pack", "-p", str(executor_python.parent.parent), "-o", str(packed),
                      "-q"], timeout=600)
    incident = INCIDENTS / CHOSEN[0]
    out = tmp_path / "events.jsonl"
    result = spark_submit(["--master", standalone[0], *[c for c in CLUSTER_CONF],
                           "--archives", f"{packed}#rd", "--conf", "spark.pyspark.python=./rd/bin/python",
                           job_script(wheel_python), "events", str(incident), "-o", str(out),
                           "--stats", str(tmp_path / "stats.json"), "-q"], wheel_python, tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert out.read_text(encoding="utf-8") == local_jsonl(incident, tmp_path)
    executors = json.loads((tmp_path / "stats.json").read_text())["executors"]
    assert executors and all(e["executor"] != "driver" for e in executors)
    assert all(e["python"].endswith("/rd/bin/python") for e in executors), executors


# ---------------------------------------------------------------- Spark Connect


def test_events_analyze_and_batch_through_spark_connect(connect_url, executor_python, archive, tmp_path):
    incident = archive / CHOSEN[0]
    out = tmp_path / "connect.jsonl"
    result = cli(["events", str(incident), "--remote", connect_url, "-o", str(out), "--stats",
                  str(tmp_path / "stats.json"), "-q"], None)
    assert result.returncode == 0, result.stderr[-3000:]
    assert out.read_text(encoding="utf-8") == local_jsonl(incident, tmp_path)
    ran_on_the_cluster(json.loads((tmp_path / "stats.json").read_text()), executor_python)

    analyzed = cli(["analyze", str(incident), "--engine", "spark", "--format", "json", "-q"], None,
                   extra_env={"SPARK_REMOTE": connect_url})
    assert analyzed.returncode in (0, 1), analyzed.stderr[-3000:]
    local = cli(["analyze", str(incident), "--engine", "local", "--format", "json", "-q"], None)
    assert json.loads(analyzed.stdout)["findings"] == json.loads(local.stdout)["findings"]

    tables = tmp_path / "tables"
    batched = cli(["batch", str(archive), "--out", str(tables), "--remote", connect_url, "--format", "json"], None)
    assert batched.returncode == 0, batched.stderr[-3000:]
    summary = json.loads(batched.stdout)
    ran_on_the_cluster(summary["read"], executor_python)
    assert parquet_rows(tables / "events") == event_rows(read_events([str(archive)], ReadOptions())[0])
    again = cli(["batch", str(archive), "--out", str(tables), "--remote", connect_url, "--format", "json"], None)
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads(again.stdout)["files"] == {"unchanged": summary["read"]["files_read"]}
