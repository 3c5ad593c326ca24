"""The Spark engine gives the same events and accounting as the in-process engine."""

from __future__ import annotations

import json

import pytest

from rebalance_doctor.core.options import ReadOptions
from rebalance_doctor.core.schema import arrow_schema
from rebalance_doctor.engines import spark as spark_engine
from rebalance_doctor.engines.local import read_events

from conftest import REAL_LOGS, REPO

LAYOUTS = REPO / "fixtures" / "layouts"


def fixture_dirs() -> list[str]:
    """Every fixture directory with logs, plus the real excerpts when they are beside the repo."""
    fixtures = REPO / "fixtures"
    dirs = sorted(p for p in fixtures.iterdir() if p.is_dir() and p.name != "incidents")
    dirs += sorted(p for p in (fixtures / "incidents").glob("*") if p.is_dir())
    if REAL_LOGS.is_dir():
        dirs.append(REAL_LOGS)
    return [str(d) for d in dirs]


def accounting(stats) -> dict:
    d = stats.to_dict()
    return {k: d[k] for k in ("files_read", "bytes", "lines", "candidates", "events", "near_misses",
                              "files", "skipped", "warnings", "packs")}


def row_key(event: dict) -> tuple:
    # Every field: two events of one line (same time, source, line and message) that differ in
    # another field must not be compared in whatever order each engine gave them.
    return (str(event["ts"]), event["source"], event["host"], event["line"], event["message"],
            json.dumps(event, sort_keys=True, default=str))


def first_difference(spark_events: list[dict], local_events: list[dict]) -> str:
    """One line a CI log keeps whole: where the engines first disagree, and which sources differ."""
    by_source: dict[str, list[int]] = {}
    for index, events in enumerate((spark_events, local_events)):
        for event in events:
            by_source.setdefault(event["source"], [0, 0])[index] += 1
    unequal = {source: counts for source, counts in by_source.items() if counts[0] != counts[1]}
    for spark_event, local_event in zip(spark_events, local_events):
        if spark_event != local_event:
            fields = {k: (spark_event.get(k), local_event.get(k)) for k in local_event
                      if spark_event.get(k) != local_event.get(k)}
            return (f"{len(spark_events)} spark / {len(local_events)} local events; counts differ for {unequal}; "
                    f"first difference at {local_event['source']}:{local_event['line']} (spark, local): {fields}")
    return f"{len(spark_events)} spark / {len(local_events)} local events; counts differ for {unequal}"


def test_both_engines_read_every_fixture_directory_identically(spark):
    inputs = fixture_dirs()
    # One run each over all directories (the same file names recur across incident directories).
    local_events, local_stats = read_events(inputs, ReadOptions())
    local_files, local_skipped = accounting(local_stats)["files"], local_stats.skipped
    spark_events, spark_stats = spark_engine.collect_events(spark, inputs, ReadOptions())
    assert len(local_events) > 100
    spark_sorted, local_sorted = sorted(spark_events, key=row_key), sorted(local_events, key=row_key)
    assert spark_sorted == local_sorted, first_difference(spark_sorted, local_sorted)
    assert accounting(spark_stats)["files"] == local_files
    assert spark_stats.skipped == local_skipped
    assert spark_stats.engine == "spark"


def test_the_same_file_name_under_two_roots_keeps_its_own_line_numbers(spark, tmp_path):
    text = (LAYOUTS / "kafka.log").read_text(encoding="utf-8")
    for root, copies in (("a", 1), ("b", 3)):
        (tmp_path / root / "broker-1").mkdir(parents=True)
        (tmp_path / root / "broker-1" / "server.log").write_text(text * copies, encoding="utf-8")
    events, stats = spark_engine.collect_events(spark, [str(tmp_path / "a"), str(tmp_path / "b")], ReadOptions())
    alone, _ = read_events([str(tmp_path / "a")], ReadOptions())
    assert min(e["line"] for e in events) == min(e["line"] for e in alone)
    assert [f.lines for f in stats.files] == [text.count("\n"), 3 * text.count("\n")]


def test_hadoop_urls_are_read_through_binary_files_with_the_same_result(spark):
    local_events, local_stats = read_events([str(LAYOUTS)], ReadOptions())
    url = LAYOUTS.resolve().as_uri()  # file:///...: the path every Hadoop filesystem takes
    spark_events, spark_stats = spark_engine.collect_events(spark, [url], ReadOptions())
    assert spark_events == local_events
    assert [f.source for f in spark_stats.files] == [f.source for f in local_stats.files]
    assert spark_stats.skipped == local_stats.skipped


def test_a_big_file_is_split_in_ranges_and_line_numbers_still_match(spark, tmp_path):
    text = (LAYOUTS / "kafka.log").read_text(encoding="utf-8")
    big = tmp_path / "server.log"
    # The "Kafka version:" line is in the first range only; every range must carry its version.
    version = "[2024-05-01 13:40:00,000] INFO Kafka version: 3.6.1 (org.apache.kafka.common.utils.AppInfoParser)\n"
    big.write_text(version + text * 40, encoding="utf-8")
    whole, _ = read_events([str(big)], ReadOptions())
    assert {e["kafka_version"] for e in whole} == {"3.6.1"}
    options = ReadOptions(split_bytes=len(text.encode()) * 3)
    planned = spark_engine._plan(spark, [str(big)], options)
    assert len(planned.units) > 4, "the file must really be cut in ranges for this test"
    split, stats = spark_engine.collect_events(spark, [str(big)], options)
    assert split == whole
    assert split == read_events([str(big)], ReadOptions(split_bytes=options.split_bytes, jobs=2))[0]
    assert stats.files_read == 1 and stats.files[0].lines == text.count("\n") * 40 + 1
    frame = spark_engine.events_frame(spark, [str(big)], options)
    try:
        assert {r["kafka_version"] for r in frame.frame.select("kafka_version").distinct().collect()} == {"3.6.1"}
    finally:
        frame.release()


def test_a_client_handles_group_stated_in_another_range_reaches_every_range(spark, tmp_path):
    # consumer-1 states its group only on its last line, consumer-2 only on its first: the
    # handle-only lines of every other range take it from another range, as in one pass.
    def line(n: int, client: str, text: str) -> str:
        return f"%7|{1714571112 + n}.345|HEARTBEAT|rdkafka#{client}| [thrd:main]: {text}\n"

    body = [line(0, "consumer-2", 'Elected leader for group "payments" with 2 member(s)')]
    for n in range(1, 400):
        body.append(line(n, "consumer-1" if n % 2 else "consumer-2", 'Acknowledging target assignment "t-0"'))
    body.append(line(400, "consumer-1", 'Elected leader for group "orders" with 2 member(s)'))
    log = tmp_path / "client" / "rdkafka.log"
    log.parent.mkdir()
    log.write_text("".join(body), encoding="utf-8")
    whole, _ = read_events([str(log)], ReadOptions())
    assert {(e["client"], e["group"]) for e in whole} == {("rdkafka#consumer-1", "orders"),
                                                         ("rdkafka#consumer-2", "payments")}
    options = ReadOptions(split_bytes=log.stat().st_size // 6)
    assert len(spark_engine._plan(spark, [str(log)], options).units) >= 6
    split, _ = spark_engine.collect_events(spark, [str(log)], options)
    assert split == whole
    frame = spark_engine.events_frame(spark, [str(log)], options)
    try:
        rows = frame.frame.select("line", "group", "attrs").collect()
    finally:
        frame.release()
    assert sorted((r["line"], r["group"], dict(r["attrs"] or {})) for r in rows) == \
        sorted((e["line"], e["group"], e["attrs"] or {}) for e in whole)


def test_a_version_stated_in_a_later_range_gives_the_same_events_as_one_pass(spark, tmp_path):
    text = (LAYOUTS / "kafka.log").read_text(encoding="utf-8")
    big = tmp_path / "server.log"

    def stated(v):
        return f"[2024-05-01 13:40:00,000] INFO Kafka version: {v} (org.apache.kafka.common.utils.AppInfoParser)\n"
    big.write_text(stated("3.6.1") + text * 30 + stated("3.7.0") + text * 10, encoding="utf-8")
    whole, _ = read_events([str(big)], ReadOptions())
    assert [e["kafka_version"] for e in sorted(whole, key=lambda e: e["line"])][-2:] == ["3.7.0", "3.7.0"]
    options = ReadOptions(split_bytes=len(text.encode()) * 4 + 7)  # the 3.7.0 line falls mid-range
    split, stats = spark_engine.collect_events(spark, [str(big)], options)
    assert split == whole
    assert stats.files[0].kafka_version == "3.7.0"


def test_events_frame_has_exactly_the_events_schema_and_fixed_lines(spark, tmp_path):
    text = (LAYOUTS / "kafka.log").read_text(encoding="utf-8")
    big = tmp_path / "server.log"
    big.write_text(text * 10, encoding="utf-8")
    options = ReadOptions(split_bytes=len(text.encode()) * 2)
    result = spark_engine.events_frame(spark, [str(big)], options)
    try:
        table = result.frame.toArrow()
    finally:
        result.release()
    assert table.schema.names == arrow_schema().names
    assert table.schema.equals(arrow_schema(), check_metadata=False)
    whole, _ = read_events([str(big)], ReadOptions())
    assert sorted(table.column("line").to_pylist()) == sorted(e["line"] for e in whole)


def test_packed_events_unpack_with_their_line_offset_and_inherited_version():
    events = [{"line": 1, "kafka_version": None, "message": "a"},
              {"line": 5, "kafka_version": "3.5", "message": "b"},
              {"line": 9, "kafka_version": "3.7.0", "message": "c"}]
    schema = spark_engine._output_schema()
    packed = spark_engine._events_batch(events, 7, schema).column(2)[0].as_buffer()

    def unpack(fix):
        batch = spark_engine._unpacked(packed, fix)
        assert batch.schema.equals(arrow_schema())
        return batch.column("line").to_pylist(), batch.column("kafka_version").to_pylist()

    assert unpack(None) == ([1, 5, 9], [None, "3.5", "3.7.0"])
    # The versions that versions.for_later_range replaces (None: the events carrying none) take
    # the one stated earlier in the file, exactly as the in-process engine replaces them.
    assert unpack((100, ("3.5", None), "3.6.1", None)) == ([101, 105, 109], ["3.6.1", "3.6.1", "3.7.0"])
    assert unpack((0, (None,), "3.6.1", None)) == ([1, 5, 9], ["3.6.1", "3.5", "3.7.0"])


def test_unreadable_inputs_are_accounted_not_raised(spark, tmp_path):
    (tmp_path / "empty.log").write_bytes(b"")
    (tmp_path / "truncated.log.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    missing = str(tmp_path / "nope")
    local_events, local_stats = read_events([str(tmp_path), missing], ReadOptions())
    events, stats = spark_engine.collect_events(spark, [str(tmp_path), missing], ReadOptions())
    assert events == local_events
    assert stats.skipped == local_stats.skipped
    assert {s["source"] for s in stats.skipped} >= {"empty.log", missing}
    remote = spark_engine.collect_events(spark, [(tmp_path / "nope").as_uri()], ReadOptions())[1]
    assert remote.files_read == 0 and "cannot list" in remote.skipped[0]["reason"]


def test_packs_given_on_the_driver_reach_the_executors(spark, tmp_path):
    pack = tmp_path / "extra.toml"
    pack.write_text(
        'pack = "extra"\nversion = "9.9"\ncomponent = "broker"\nscan = ["Wobbling group"]\n\n'
        '[patterns."extra.wobble"]\nevent = "rebalance.prepare"\ngate = "Wobbling group"\ndoc = "test"\n'
        '[[patterns."extra.wobble".variants]]\nkafka = ">=2.4"\nlogger = "kafka.coordinator.group.GroupCoordinator"\n'
        'regex = \'Wobbling group (?P<group>\\S+)\'\nsamples = []\n', encoding="utf-8")
    log = tmp_path / "logs" / "server.log"
    log.parent.mkdir()
    log.write_text("[2024-05-01 10:00:00,000] INFO [GroupCoordinator 1]: Wobbling group orders "
                   "(kafka.coordinator.group.GroupCoordinator)\n", encoding="utf-8")
    options = ReadOptions(packs=[pack])
    local_events, _ = read_events([str(log.parent)], options)
    events, stats = spark_engine.collect_events(spark, [str(log.parent)], options)
    assert events == local_events
    assert stats.packs.get("extra") == "9.9"
    assert [e["pattern"] for e in events] == ["extra.wobble"]


def test_events_command_on_spark_writes_what_the_local_engine_writes(spark, tmp_path):
    from typer.testing import CliRunner

    from rebalance_doctor.cli.app import app

    runner = CliRunner()
    outputs = {}
    for engine in ("local", "spark"):
        out = tmp_path / f"{engine}.jsonl"
        result = runner.invoke(app, ["events", str(LAYOUTS), "--engine", engine, "-o", str(out), "-q"])
        assert result.exit_code == 0, result.output
        outputs[engine] = out.read_text(encoding="utf-8")
    assert outputs["spark"] == outputs["local"] and outputs["local"].count("\n") > 100
    refused = runner.invoke(app, ["events", LAYOUTS.as_uri(), "--engine", "local", "-o", str(tmp_path / "x.jsonl")])
    assert refused.exit_code == 2 and "--engine spark" in refused.output


def test_analyze_on_spark_reports_what_it_reports_locally(spark):
    from typer.testing import CliRunner

    from rebalance_doctor.cli.app import app

    incident = REPO / "fixtures" / "incidents" / "poll-timeout-storm"
    if not incident.is_dir():
        pytest.skip("fixtures/incidents/poll-timeout-storm is not present")
    runner = CliRunner()
    reports = {}
    for engine in ("local", "spark"):
        result = runner.invoke(app, ["analyze", str(incident), "--engine", engine, "--format", "json", "-q"])
        assert result.exit_code in (0, 1), result.output
        reports[engine] = json.loads(result.stdout)
    assert reports["spark"]["findings"] == reports["local"]["findings"]
    assert reports["local"]["findings"]


def test_spark_submit_entry_point_runs_events_and_analyze_on_spark():
    from rebalance_doctor.spark_job import arguments

    assert arguments(["events", "logs", "-o", "x.parquet"]) == ["events", "--engine", "spark", "logs", "-o", "x.parquet"]
    assert arguments(["analyze", "--engine=local", "logs"]) == ["analyze", "--engine=local", "logs"]
    assert arguments(["batch", "logs", "--out", "o"]) == ["batch", "logs", "--out", "o"]


def test_auto_engine_stays_local_for_an_incident_and_goes_to_spark_when_it_must(tmp_path):
    from rebalance_doctor.engines.choose import EngineError, choose_engine

    assert choose_engine("auto", [str(LAYOUTS)]).engine == "local"
    assert choose_engine("auto", [str(LAYOUTS)], threshold=1024).engine == "spark"
    assert choose_engine("auto", ["s3a://bucket/logs/"]).engine == "spark"
    assert choose_engine("auto", [str(LAYOUTS)], master="local[2]").engine == "spark"
    with pytest.raises(EngineError):
        choose_engine("local", ["hdfs:///logs"])
    with pytest.raises(EngineError):
        choose_engine("fast", [str(LAYOUTS)])
