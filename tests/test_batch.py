"""`rebalance-doctor batch`: Parquet tables that read back, the same diagnosis as `analyze`,
and incremental re-runs that read only what is new."""

from __future__ import annotations

import json
import os
import shutil
from collections import defaultdict

import pyarrow.parquet as pq
import pytest

from conftest import REPO
from rebalance_doctor.diagnosis import FINDING_COLUMNS, REBALANCE_COLUMNS, analyze_group, arrow_schema
from rebalance_doctor.batch import Manifest, OutputDir, run_batch
from rebalance_doctor.core.options import ReadOptions
from rebalance_doctor.core.schema import NAMES
from rebalance_doctor.core.schema import arrow_schema as events_schema
from rebalance_doctor.engines.local import read_events

INCIDENTS = REPO / "fixtures" / "incidents"
CHOSEN = ("poll-timeout-storm", "membership-flapping")


@pytest.fixture
def archive(tmp_path):
    """A copy of two incident directories (the tests change files and mtimes)."""
    root = tmp_path / "archive"
    for name in CHOSEN:
        if not (INCIDENTS / name).is_dir():
            pytest.skip(f"fixtures/incidents/{name} is not present")
        shutil.copytree(INCIDENTS / name, root / name)
    return root


def event_rows(events: list[dict]) -> list[tuple]:
    return sorted((str(e["ts"]), e["source"], e["line"], e["event"], e["group"], e["message"]) for e in events)


def parquet_events(out) -> list[dict]:
    table = pq.read_table(out / "events")
    rows = table.select(list(NAMES)).to_pylist()
    for row in rows:
        row["attrs"] = dict(row["attrs"]) if row["attrs"] is not None else None
    return rows


def local_diagnosis(events: list[dict]) -> tuple[list[dict], list[dict]]:
    groups = defaultdict(list)
    for event in events:
        if event["group"]:
            groups[event["group"]].append(event)
    rebalances, findings = [], []
    for group in sorted(groups):
        r, f = analyze_group(groups[group])
        rebalances += r
        findings += f
    return rebalances, findings


def comparable(rows: list[dict]) -> list[str]:
    # A map column reads back from Parquet as (key, value) pairs.
    rows = [{k: dict(v) if k == "culprit" and isinstance(v, list) else v for k, v in r.items()} for r in rows]
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)


def test_batch_writes_tables_that_read_back_and_match_the_local_engine(spark, archive, tmp_path):
    out = tmp_path / "out"
    summary = run_batch(spark, [str(archive)], out)
    local_events, _ = read_events([str(archive)], ReadOptions())

    events_table = pq.read_table(out / "events")
    assert events_table.schema.field("ts").type == events_schema().field("ts").type  # UTC instants
    for name in NAMES:
        assert events_table.schema.field(name).type == events_schema().field(name).type, name
    assert {p.name.split("=")[0] for p in (out / "events").iterdir() if p.is_dir()} == {"date"}
    assert event_rows(parquet_events(out)) == event_rows(local_events)
    assert spark.read.parquet(str(out / "events")).count() == len(local_events)

    rebalances = pq.read_table(out / "rebalances")
    findings = pq.read_table(out / "findings")
    assert rebalances.schema.equals(arrow_schema(REBALANCE_COLUMNS), check_metadata=False)
    assert findings.schema.equals(arrow_schema(FINDING_COLUMNS), check_metadata=False)
    expected_rebalances, expected_findings = local_diagnosis(local_events)
    assert expected_findings, "the chosen incidents must produce findings"
    assert comparable(rebalances.to_pylist()) == comparable(expected_rebalances)
    assert comparable(findings.to_pylist()) == comparable(expected_findings)

    written = json.loads((out / "summary.json").read_text())
    assert written["run"]["events"] == len(local_events)
    assert written["table"]["findings"] == len(expected_findings)
    assert written["files"] == {"new": summary["read"]["files_read"]}


def test_a_rerun_reads_only_new_and_grown_files_and_appends(spark, archive, tmp_path):
    out = tmp_path / "out"
    first = run_batch(spark, [str(archive)], out)
    files = first["read"]["files_read"]

    # Nothing changed; one file only touched (rsync without -t): nothing is read again.
    touched = archive / CHOSEN[0] / "node1.log"
    os.utime(touched, (1_700_000_000, 1_700_000_000))
    again = run_batch(spark, [str(archive)], out)
    assert again["read"]["files_read"] == 0 and again["files"] == {"unchanged": files}
    assert again["run"]["events"] == 0

    # A log grew (its tail repeats its own lines, so the new lines hold events) and a new one came.
    grown = archive / CHOSEN[0] / "node2.log"
    original = grown.read_text(encoding="utf-8")
    grown.write_text(original + original, encoding="utf-8")
    shutil.copy(archive / CHOSEN[1] / "search-1.log", archive / CHOSEN[1] / "search-9.log")
    third = run_batch(spark, [str(archive)], out)
    assert third["files"] == {"appended": 1, "new": 1, "unchanged": files - 1}
    assert sorted(third["files_read"]) == sorted([f"{CHOSEN[0]}/node2.log", f"{CHOSEN[1]}/search-9.log"])

    # The table now holds exactly what one full read of the grown archive gives, line numbers included.
    full, _ = read_events([str(archive)], ReadOptions())
    assert event_rows(parquet_events(out)) == event_rows(full)
    assert third["table"]["events"] == len(full)
    manifest = Manifest.load(OutputDir(spark, out))
    assert manifest.files[str(grown.resolve())]["lines"] == 2 * original.count("\n")
    assert manifest.runs == 3
    assert {f["packs_digest"] for f in manifest.files.values()} == {third["packs_digest"]}


def test_batch_command_writes_to_a_hadoop_url_and_refuses_a_file_as_out(spark, archive, tmp_path):
    from typer.testing import CliRunner

    from rebalance_doctor.cli.app import app

    runner = CliRunner()
    out = tmp_path / "out"
    # file:// goes through the Hadoop filesystem API, as hdfs:// or s3a:// would.
    result = runner.invoke(app, ["batch", str(archive / CHOSEN[1]), "--out", out.as_uri(), "-q", "--by-host"])
    assert result.exit_code == 0, result.output
    # A Hadoop URL gets tables only (no driver-written file): the run's summary is in runs/.
    assert "findings" in result.output and not (out / "summary.json").exists()
    logs = sum(1 for _ in (archive / CHOSEN[1]).rglob("*.log"))
    runs = pq.read_table(out / "runs").to_pylist()
    assert [json.loads(r["summary"])["files"] for r in runs] == [{"new": logs}]
    assert pq.read_table(out / "manifest").num_rows == logs
    assert {p.name.split("=")[0] for p in (out / "events").iterdir() if p.is_dir()} == {"date"}
    assert any(p.name.startswith("host=") for p in next((out / "events").glob("date=*")).iterdir())
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    refused = runner.invoke(app, ["batch", str(archive), "--out", str(a_file)])
    assert refused.exit_code == 2 and "not a directory" in refused.output


def test_manifest_decides_new_unchanged_appended_and_changed(tmp_path):
    from rebalance_doctor.batch import fingerprint

    log = tmp_path / "server.log"
    log.write_bytes(b"line one\nline two\n")
    key, size = str(log), log.stat().st_size
    manifest = Manifest()
    assert manifest.select(key, size, log.stat().st_mtime) == (0, 0)
    manifest.files[key] = {"size": size, "mtime": log.stat().st_mtime, "lines": 2, **fingerprint(key, size)}
    assert manifest.select(key, size, log.stat().st_mtime) is None
    os.utime(log, (1_700_000_000, 1_700_000_000))
    assert manifest.select(key, size, log.stat().st_mtime) is None          # touched only
    with open(log, "ab") as handle:
        handle.write(b"line three\n")
    assert manifest.select(key, log.stat().st_size, log.stat().st_mtime) == (size, 2)
    log.write_bytes(b"rotated: other content\n")                             # rewritten
    assert manifest.select(key, log.stat().st_size, log.stat().st_mtime) == (0, 0)
    assert manifest.changed == [key]
    assert manifest.decisions == {"new": 1, "unchanged": 2, "appended": 1, "changed": 1}
    # Hadoop files are not fingerprinted: growth is an append, the same size with a new mtime a change.
    url = "s3a://bucket/logs/server.log"
    manifest.files[url] = {"size": 100, "mtime": 1.0, "lines": 7}
    assert manifest.select(url, 150, 2.0) == (100, 7)
    assert manifest.select(url, 100, 2.0) == (0, 0)


def test_an_archive_on_hadoop_storage_is_read_incrementally_too(spark, archive, tmp_path):
    out = tmp_path / "out"
    url = archive.as_uri()  # file:// is read through binaryFile, as hdfs:// or s3a:// would be
    first = run_batch(spark, [url], out)
    grown = archive / CHOSEN[0] / "node3.log"
    original = grown.read_text(encoding="utf-8")
    grown.write_text(original + original, encoding="utf-8")
    second = run_batch(spark, [url], out)
    assert second["files"] == {"appended": 1, "unchanged": first["read"]["files_read"] - 1}
    assert second["files_read"] == [f"{CHOSEN[0]}/node3.log"]
    full, _ = read_events([str(archive)], ReadOptions())
    assert event_rows(parquet_events(out)) == event_rows(full)
