"""Groups keyed by cluster: a bundle of two clusters whose groups share a group.id is two
timelines (prod/payments, staging/payments), never one; a bundle of one cluster is as before."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rebalance_doctor import api
from rebalance_doctor.cli.app import app
from rebalance_doctor.core.sources import discover

REPO = Path(__file__).resolve().parents[1]
STORM = REPO / "fixtures" / "incidents" / "poll-timeout-storm"
runner = CliRunner()


@pytest.fixture()
def bundle(tmp_path: Path) -> Path:
    """One shipped incident copied twice, as a bundle of two clusters would hold it."""
    for cluster in ("prod", "staging"):
        shutil.copytree(STORM, tmp_path / cluster)
    return tmp_path


def test_two_clusters_named_on_the_command_line_are_two_groups(bundle: Path):
    clusters = {str(bundle / "prod"): "prod", str(bundle / "staging"): "staging"}
    result = api.analyze([bundle], clusters=clusters)
    one = api.analyze(STORM)
    assert sorted(g.timeline.group for g in result.groups) == ["prod/payments", "staging/payments"]
    # Nothing merged: each cluster's timeline is the single incident's, rebalance for rebalance.
    for group in result.groups:
        assert len(group.timeline.rebalances) == len(one.groups[0].timeline.rebalances) == 10
    # Findings per cluster, each with its own cluster's evidence only.
    for cluster in ("prod", "staging"):
        found = [f for f in result.findings if f.group == f"{cluster}/payments"]
        assert sorted(f.rule for f in found) == sorted(f.rule for f in one.findings)
        sources = {e.source for f in found for e in f.evidence}
        assert sources and all(s.startswith(f"{cluster}/") for s in sources), sources
    assert {e["cluster"] for e in result.event_rows} == {"prod", "staging"}


def test_a_group_asked_by_its_bare_name_is_every_clusters(bundle: Path):
    result = api.analyze([bundle], groups=["payments"],
                         clusters={str(bundle / "prod"): "prod", str(bundle / "staging"): "staging"})
    assert sorted(g.timeline.group for g in result.groups) == ["prod/payments", "staging/payments"]
    only = api.analyze([bundle], groups=["staging/payments"],
                       clusters={str(bundle / "prod"): "prod", str(bundle / "staging"): "staging"})
    assert [g.timeline.group for g in only.groups] == ["staging/payments"]


def test_one_cluster_named_is_analysed_as_without_it(bundle: Path):
    named = api.analyze([bundle / "prod"], clusters={str(bundle / "prod"): "prod"})
    plain = api.analyze(STORM)
    assert [g.timeline.group for g in named.groups] == [g.timeline.group for g in plain.groups] == ["payments"]
    assert [f.rule for f in named.findings] == [f.rule for f in plain.findings]
    assert {e["cluster"] for e in named.event_rows} == {"prod"}
    # Without --cluster, the files that state the cluster id (its clients) carry it; the broker's does not.
    assert {e["cluster"] for e in plain.event_rows} == {None, "Q2pZ8H1yRjyNKKqI6bJQeA"}


LAB = REPO / "fixtures" / "lab"


def test_two_lab_recordings_of_two_real_clusters_are_told_apart_by_their_cluster_ids(tmp_path: Path):
    """Two clusters recorded by the lab (Kafka 4.4.0 and 4.2.1), each with a group orders, in one
    bundle, nothing said on the command line: the clients' "Cluster ID:" lines split them, and
    each broker log (KRaft: it states no id) goes with the clients beside it."""
    recordings = {"a": LAB / "crash-kill@4.4.0", "b": LAB / "crash-kill@4.2.1"}
    for name, recording in recordings.items():
        shutil.copytree(recording, tmp_path / name)
    result = api.analyze([tmp_path])
    ids = {"a": "wxevPTjYRVeW9_LxhNFNtw", "b": "A6xzkVBwRFWf-U-sUHEA7g"}
    assert sorted(g.timeline.group for g in result.groups) == sorted(f"{i}/orders" for i in ids.values())
    for name, recording in recordings.items():
        alone = api.analyze(recording)
        keyed = result.group(f"{ids[name]}/orders")
        assert len(keyed.timeline.rebalances) == len(alone.groups[0].timeline.rebalances)
        assert sorted(f.rule for f in keyed.findings) == sorted(f.rule for f in alone.findings)
        sources = {e.source for f in keyed.findings for e in f.evidence}
        assert sources and all(s.startswith(f"{name}/") for s in sources), sources
        broker = {e["cluster"] for e in result.event_rows if e["source"] == f"{name}/kafka-1.log"}
        assert broker == {ids[name]}


def test_the_same_file_name_in_two_inputs_stays_two_sources(bundle: Path):
    found = discover([str(bundle / "prod"), str(bundle / "staging")])
    names = sorted(s.name for s in found.sources)
    assert len(names) == len(set(names)) == 8
    assert f"{bundle}/prod/broker-1/server.log" in names and f"{bundle}/staging/broker-1/server.log" in names
    # One input: names relative to it, as always.
    assert sorted(s.name for s in discover([str(STORM)]).sources) == [
        "broker-1/server.log", "node1.log", "node2.log", "node3.log"]


def test_events_and_query_carry_the_cluster(bundle: Path, monkeypatch):
    monkeypatch.chdir(bundle)
    cli = ["--cluster", "prod=prod", "--cluster", "staging=staging"]
    out = runner.invoke(app, ["events", "prod", "staging", "-q", *cli])
    assert out.exit_code == 0, out.output
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert {(r["cluster"], r["source"].split("/")[0]) for r in rows} == {("prod", "prod"), ("staging", "staging")}
    pytest.importorskip("duckdb")
    out = runner.invoke(app, ["query", 'select cluster, "group", count(*) as n from events where "group" is not null '
                                       'group by all order by 1', ".", "-q", "--format", "csv", *cli])
    assert out.exit_code == 0, out.output
    assert "prod,prod/payments," in out.stdout and "staging,staging/payments," in out.stdout


def test_a_bad_cluster_option_is_a_usage_error(bundle: Path):
    out = runner.invoke(app, ["analyze", str(bundle), "--cluster", "prod"])
    assert out.exit_code == 2
    out = runner.invoke(app, ["analyze", str(bundle), "--cluster", f"prod={bundle / 'nowhere'}"])
    assert out.exit_code == 2


def test_redaction_leaves_no_cluster_nor_group_name(bundle: Path):
    result = api.analyze([bundle], clusters={str(bundle / "prod"): "prod", str(bundle / "staging"): "staging"},
                         redact=True)
    assert len({g.timeline.group for g in result.groups}) == 2
    for text in (result.to_json(), result.to_html(), result.to_markdown()):
        for name in ("payments", "staging", "Q2pZ8H1yRjyNKKqI6bJQeA"):
            assert name not in text


def test_the_json_report_names_each_groups_cluster(bundle: Path):
    result = api.analyze([bundle], clusters={str(bundle / "prod"): "prod", str(bundle / "staging"): "staging"})
    jsonschema = pytest.importorskip("jsonschema")
    document = result.to_dict()
    jsonschema.Draft202012Validator(json.loads((REPO / "docs" / "schema" / "analyze.json").read_text())).validate(document)
    groups = document["groups"]
    assert sorted((g["group"], g["cluster"]) for g in groups) == [("prod/payments", "prod"),
                                                                 ("staging/payments", "staging")]
    assert [g["cluster"] for g in api.analyze(STORM).to_dict()["groups"]] == [None]


def test_follow_keys_groups_by_the_clusters_named(bundle: Path):
    """analyze --follow with --cluster: the same two groups as the analysis after the fact."""
    from rebalance_doctor.core.options import ReadOptions
    from rebalance_doctor.live import Live
    from rebalance_doctor.rules.config import load

    options = ReadOptions(clusters={str(bundle / "prod"): "prod", str(bundle / "staging"): "staging"})
    ticks = iter(range(1, 10**9))
    live = Live([str(bundle)], options, load(None), clock=lambda: float(next(ticks)))
    try:
        live.step(final=True)
        result = live.result()
    finally:
        live.close()
    assert sorted(g.timeline.group for g in result.groups) == ["prod/payments", "staging/payments"]
    assert {f.group for f in result.findings} == {"prod/payments", "staging/payments"}


# -- Spark: batch and --engine spark key groups by cluster as the local engine does -------------------------

def _by_group(rows: list[dict]) -> dict[str, list]:
    out: dict[str, list] = {}
    for row in rows:
        out.setdefault(row["group"], []).append((row["rule"], row["severity"], row["title"]) if "rule" in row
                                                 else (row["index"], row["generation"], row["verdict"]))
    return {group: sorted(found) for group, found in sorted(out.items())}


@pytest.mark.parametrize("hadoop", [False, True], ids=["local-paths", "hadoop-urls"])
def test_batch_keys_groups_by_the_clusters_named(spark, bundle: Path, tmp_path: Path, hadoop: bool):
    """`batch --cluster`: the findings and rebalances tables hold prod/payments and staging/payments, each the
    local analysis's of that cluster; with the archive given as URLs, --cluster names URLs too."""
    import pyarrow.parquet as pq

    from rebalance_doctor.result.rows import finding_row, rebalance_row
    from rebalance_doctor.batch import run_batch
    from rebalance_doctor.core.options import ReadOptions

    where = (lambda p: p.as_uri()) if hadoop else str
    clusters = {where(bundle / "prod"): "prod", where(bundle / "staging"): "staging"}
    out = tmp_path / "out"
    summary = run_batch(spark, [where(bundle)], out, ReadOptions(clusters=clusters))
    local = api.analyze([bundle], clusters={str(bundle / "prod"): "prod", str(bundle / "staging"): "staging"})
    findings = _by_group(pq.read_table(out / "findings").to_pylist())
    rebalances = _by_group(pq.read_table(out / "rebalances").to_pylist())
    assert list(findings) == list(rebalances) == ["prod/payments", "staging/payments"]
    expected = _by_group([finding_row(f) for f in local.findings])
    if hadoop:   # (a Hadoop file's host is named by its path under the URL given, not by the local planning)
        findings, expected = ({g: [x[:2] for x in found] for g, found in table.items()} for table in (findings, expected))
    assert findings == expected
    assert rebalances == _by_group([rebalance_row(g.timeline, r) for g in local.groups for r in g.timeline.rebalances])
    events = pq.read_table(out / "events", columns=["source", "cluster"]).to_pylist()
    assert {(e["cluster"], e["source"].split("/")[0]) for e in events} == {("prod", "prod"), ("staging", "staging")}
    # Each row of the diagnosis tables carries its group's cluster, as analyze's tables do.
    for table in ("findings", "rebalances"):
        rows = pq.read_table(out / table, columns=["group", "cluster"]).to_pylist()
        assert {(r["group"], r["cluster"]) for r in rows} == {("prod/payments", "prod"), ("staging/payments", "staging")}
    assert summary["table"]["clusters"] == ["prod", "staging"]
    assert {(f["group"], f["cluster"]) for f in summary["table"]["top"]} == {("prod/payments", "prod"),
                                                                          ("staging/payments", "staging")}


def test_the_spark_engine_honours_cluster_as_the_local_one(spark, bundle: Path):
    clusters = {str(bundle / "prod"): "prod", str(bundle / "staging"): "staging"}
    local = api.analyze([bundle], clusters=clusters, engine="local")
    on_spark = api.analyze([bundle], clusters=clusters, engine="spark", master="local[2]")
    assert ([(f.group, f.rule, f.title) for f in on_spark.findings]
            == [(f.group, f.rule, f.title) for f in local.findings])
    assert sorted(g.timeline.group for g in on_spark.groups) == ["prod/payments", "staging/payments"]


def test_follow_keys_groups_by_the_cluster_ids_the_logs_state(tmp_path: Path):
    """Two lab recordings followed as they are written, ten lines a file at a time: the clients' "Cluster ID:"
    lines come ~135 lines in, long after each file's layout is decided; the groups end keyed by those ids,
    each with the rebalances and findings of analyze over the finished bundle. (The 4.2.1 recording is moved an
    hour earlier, 10 minutes after the other: two clusters written at the same time, none of it folded.)"""
    from rebalance_doctor.core.options import ReadOptions
    from rebalance_doctor.live import Live
    from rebalance_doctor.rules.config import load

    recordings = {"a": LAB / "crash-kill@4.4.0", "b": LAB / "crash-kill@4.2.1"}
    texts = {}
    for name, recording in recordings.items():
        (tmp_path / name).mkdir()
        for log in sorted(recording.glob("*.log")):
            data = log.read_bytes()
            if name == "b":
                data = data.replace(b"2026-12-06T05:", b"2026-12-06T04:").replace(b"[2026-12-06 05:", b"[2026-12-06 04:")
            texts[tmp_path / name / log.name] = data.splitlines(keepends=True)
            (tmp_path / name / log.name).write_bytes(b"")
    ticks = iter(range(1, 10**9))
    live = Live([str(tmp_path)], ReadOptions(), load(None), clock=lambda: float(next(ticks)))
    try:
        written = 0
        while any(written < len(lines) for lines in texts.values()):
            for path, lines in texts.items():
                with open(path, "ab") as out:
                    out.write(b"".join(lines[written:written + 10]))
            written += 10
            live.step()
            live.step()
        live.step(final=True)
        followed = live.result()
    finally:
        live.close()
    expected = api.analyze([tmp_path])
    ids = {"wxevPTjYRVeW9_LxhNFNtw", "A6xzkVBwRFWf-U-sUHEA7g"}
    assert sorted(g.timeline.group for g in followed.groups) == sorted(f"{i}/orders" for i in ids)
    for group in expected.groups:
        mine = followed.group(group.timeline.group)
        assert len(mine.timeline.rebalances) == len(group.timeline.rebalances)
        assert sorted((f.rule, f.title) for f in mine.findings) == sorted((f.rule, f.title) for f in group.findings)
    assert {e["cluster"] for e in followed.event_rows if e["source"].endswith("kafka-1.log")} == ids


# -- MirrorMaker 2: one process, clients of two clusters (core/mirror.py) ----------------------------------

MM2 = REPO / "fixtures" / "clusters" / "mirrormaker2" / "mm2.log"
WEST, EAST = "Q2pZ8H1yRjyNKKqI6bJQeA", "k3PcxUu7QxaN1e2Gm9ZbLw"


@pytest.fixture()
def mirrored(tmp_path: Path) -> Path:
    """us-west and us-east, each with a group payments (the shipped incident, the east copy stating its own
    cluster id), and the MM2 process replicating us-west->us-east (with heartbeats back): its two Connect
    herders' worker groups are both named mm2 (``us-east.group.id = mm2``, ``us-west.group.id = mm2``), one
    on each cluster; its log states both clusters' ids, each with the client that reached it."""
    shutil.copytree(STORM, tmp_path / "us-west")
    shutil.copytree(STORM, tmp_path / "us-east")
    for log in (tmp_path / "us-east").rglob("*.log"):
        log.write_text(log.read_text(encoding="utf-8").replace(WEST, EAST), encoding="utf-8")
    (tmp_path / "mm2").mkdir()
    shutil.copy(MM2, tmp_path / "mm2" / "mm2.log")
    return tmp_path


def test_mirrormaker2_clients_are_attributed_to_the_cluster_they_run_against(mirrored: Path):
    """Each herder's worker (client.id SOURCE->TARGET) runs against its TARGET: us-west->us-east's group mm2 is
    us-east's, the heartbeat herder us-east->us-west's group mm2 us-west's: two timelines, each with its own
    worker's rebalances only, beside each cluster's payments."""
    result = api.analyze([mirrored])
    assert sorted(g.timeline.group for g in result.groups) == sorted(
        f"{c}/{g}" for c in (WEST, EAST) for g in ("mm2", "payments"))
    for cluster, client in ((EAST, "us-west->us-east"), (WEST, "us-east->us-west")):
        group = result.group(f"{cluster}/mm2")
        assert {e["client"] for e in group.timeline.events if e.get("client")} == {client}
        assert [r.generation for r in group.timeline.rebalances] == (
            [5, 6, 7] if cluster == EAST else [8, 9, 10])
    rows = [e for e in result.event_rows if e["source"] == "mm2/mm2.log"]
    assert {(e["client"], e["cluster"]) for e in rows if e.get("client")} == {
        ("us-west->us-east", EAST), ("us-east->us-west", WEST)}


def test_without_the_attribution_the_two_mm2_groups_would_be_one(mirrored: Path):
    """What the attribution prevents: the log states two ids, so as a file it is no one cluster's, and both
    herders' lines would make one group mm2 with two workers' generations interleaved."""
    from rebalance_doctor.core import clusterid

    assert clusterid.stated(MM2.read_bytes()) is None
    assert "mm2" not in {g.timeline.group for g in api.analyze([mirrored]).groups}


@pytest.mark.parametrize("client,alias", [
    ("us-west->us-east", "us-east"),                                                  # a flow's worker
    ("mm2-us-west->us-east-offsets", "us-east"),                                      # its internal topics
    ("mm2-us-west->us-east-shared-admin", "us-east"),
    ("us-west->us-east|MirrorSourceConnector|replication-consumer", "us-west"),       # 3.5+ connector clients
    ("us-west->us-east|MirrorSourceConnector|replication-source-admin", "us-west"),
    ("us-west->us-east|MirrorSourceConnector|offset-syncs-source-producer", "us-west"),
    ("us-west->us-east|MirrorCheckpointConnector|checkpoint-target-admin", "us-east"),
    ("my-app|us-west->us-east|MirrorHeartbeatConnector|heartbeats-target-admin", "us-east"),  # a client.id prefix
    ("connector-producer-MirrorSourceConnector-0", None),                             # the same in every flow
    ("consumer-payments-1", None),
])
def test_the_alias_an_mm2_client_id_names(client, alias):
    from rebalance_doctor.core.mirror import alias_of

    assert alias_of(client) == alias


def test_follow_attributes_mirrormaker2_clients_as_analyze(mirrored: Path):
    """Followed from empty files written ten lines at a time, the MM2 log's clients end in the clusters
    analyze gives them."""
    from rebalance_doctor.core.options import ReadOptions
    from rebalance_doctor.live import Live
    from rebalance_doctor.rules.config import load

    expected = api.analyze([mirrored])
    texts = {}
    for log in sorted(mirrored.rglob("*.log")):
        texts[log] = log.read_bytes().splitlines(keepends=True)
        log.write_bytes(b"")
    ticks = iter(range(1, 10**9))
    live = Live([str(mirrored)], ReadOptions(), load(None), clock=lambda: float(next(ticks)))
    try:
        written = 0
        while any(written < len(lines) for lines in texts.values()):
            for path, lines in texts.items():
                with open(path, "ab") as out:
                    out.write(b"".join(lines[written:written + 10]))
            written += 10
            live.step()
            live.step()
        live.step(final=True)
        followed = live.result()
    finally:
        live.close()
    assert sorted(g.timeline.group for g in followed.groups) == sorted(g.timeline.group for g in expected.groups)
    for group in expected.groups:
        assert ([r.generation for r in followed.group(group.timeline.group).timeline.rebalances]
                == [r.generation for r in group.timeline.rebalances])


def test_the_rebalances_and_findings_tables_carry_each_groups_cluster(mirrored: Path):
    """The tables of the local engine (``Analysis.rebalances`` / ``.findings``, query's tables, the JSON's groups):
    every row of a keyed group names the cluster it is keyed by, the MM2 worker groups each their TARGET's; a
    bundle of one cluster leaves the column null, as the JSON's group does."""
    result = api.analyze([mirrored])
    for table in (result.rebalances.to_arrow(), result.findings.to_arrow()):
        rows = table.select(["group", "cluster"]).to_pylist()
        assert rows and all(r["group"] == f"{r['cluster']}/{r['group'].split('/', 1)[1]}" for r in rows), rows
    assert {(r["group"], r["cluster"]) for r in result.rebalances.to_dicts()} == {
        (f"{c}/{g}", c) for c in (WEST, EAST) for g in ("mm2", "payments")}
    assert {g["group"]: g["cluster"] for g in result.to_dict()["groups"]} == {
        r["group"]: r["cluster"] for r in result.rebalances.to_dicts()}
    assert "cluster" not in result.to_dict()["groups"][0]["rebalances"][0]   # the group carries it
    plain = api.analyze(STORM)
    assert {r["cluster"] for r in plain.rebalances.to_dicts()} == {r["cluster"] for r in plain.findings.to_dicts()} == {None}
    pytest.importorskip("duckdb")
    from rebalance_doctor.query import tables

    connection = tables.connect(tables.from_analysis(result))
    keyed = connection.execute('select distinct cluster, "group" from findings order by 1, 2').fetchall()
    assert keyed and all(group.startswith(f"{cluster}/") for cluster, group in keyed)


# -- MirrorMaker 2 before 3.5: no client named after its flow; the lines of no client say which herder is which --

# The connect runtime's worker lines come from the project's inventory (patterns/kafka/templates.jsonl: its
# WorkerCoordinator, AbstractCoordinator and DistributedHerder rows at each release). Two lines name no client and are
# not in it (it holds the group-membership classes only), so they are written as the releases' sources write them:
# MirrorMaker.addHerder's "creating herder for " + sourceAndTarget and ConnectUtils' "Kafka cluster ID: {}"
# (connect-mirror and connect-runtime 3.3.1 and 3.4.0 -sources jars); and clients.Metadata's "Cluster ID: {}".
_WORKER_LINES = (("WorkerCoordinator", "Rebalance started"), ("AbstractCoordinator", "(Re-)joining group"),
                 ("AbstractCoordinator", "Successfully joined group with generation {}"),
                 ("AbstractCoordinator", "Successfully synced group in generation {}"),
                 ("DistributedHerder", "Joined group at generation {} with protocol version {} and got assignment: {} "
                                       "with rebalance delay: {}"))


def _mm2_before_35(version: str, printed: bool) -> str:
    """The log of an MM2 process of ``version`` (2.4.0 or 3.3.1: ``MirrorMakerConfig.workerConfig`` sets no
    client.id before 3.5) replicating us-west->us-east with heartbeats back, both herders' worker groups named
    mm2: its herders' workers are Connect's default connect-1 and connect-2, in the order MirrorMaker made them.
    ``printed``: each worker's own "Cluster ID:" line is in the log (else only the herders' lookups say the ids)."""
    from rebalance_doctor.packgen.inventory import load_rows
    from rebalance_doctor.packgen.render import fill

    rows = {(r.cls, r.template): r for r in load_rows() if r.version == version and r.component == "connect"
            and r.logger.startswith("org.apache.kafka.") and not r.logger.endswith("ConsumerCoordinator")}
    clock = [datetime(2024, 3, 5, 10, 0, 2, 311000)]
    out: list[str] = []

    def say(message: str, logger: str, line: int, ms: int = 3) -> None:
        t = clock[0] = clock[0] + timedelta(milliseconds=ms)
        out.append(f"[{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d}] INFO {message} ({logger}:{line})")

    flows = (("us-west", "us-east", EAST), ("us-east", "us-west", WEST))
    for source, target, cluster in flows:
        say(f"creating herder for {source}->{target}", "org.apache.kafka.connect.mirror.MirrorMaker", 229)
        say(f"Kafka cluster ID: {cluster}", "org.apache.kafka.connect.util.ConnectUtils", 72)
    for n, ((source, target, cluster), generations) in enumerate(zip(flows, ((5, 6, 7), (8, 9, 10))), start=1):
        prefix = f"[Worker clientId=connect-{n}, groupId=mm2] "
        member = f"connect-{n}-{uuid_of(n)}"
        if printed:
            say(prefix + f"Cluster ID: {cluster}", "org.apache.kafka.clients.Metadata", 279)
        for generation in generations:
            values = {"Successfully joined group with generation {}": [
                          generation if version < "2.5" else
                          f"Generation{{generationId={generation}, memberId='{member}', protocol='sessioned'}}"],
                      "Successfully synced group in generation {}": [
                          f"Generation{{generationId={generation}, memberId='{member}', protocol='sessioned'}}"],
                      "Joined group at generation {} with protocol version {} and got assignment: {} with rebalance "
                      "delay: {}": [generation, 2, f"Assignment{{error=0, leader='{member}', leaderUrl='NOTUSED/{source}', "
                                                   f"offset=41, connectorIds=[MirrorSourceConnector], taskIds=[], "
                                                   f"revokedConnectorIds=[], revokedTaskIds=[], delay=0}}", 0]}
            for cls, template in _WORKER_LINES:
                row = rows.get((cls, template))
                if row is not None:   # (2.4.0 logs no "Successfully synced group")
                    say(prefix + fill(row.template, values.get(template, [])), row.logger, row.line)
            clock[0] += timedelta(seconds=60)
    return "\n".join(out) + "\n"


def uuid_of(n: int) -> str:
    return f"{n:08x}-9b55-4f8e-8f0e-2c6a7d3b9e10"


@pytest.mark.parametrize("version", ["2.4.0", "3.3.1"])
@pytest.mark.parametrize("printed", [True, False], ids=["worker-prints-its-id", "herders-lookups-only"])
def test_mirrormaker2_before_3_5_is_attributed_by_its_herders(tmp_path: Path, version: str, printed: bool):
    """Before 3.5 an MM2 worker is connect-N, a name no flow is in: the N-th herder MirrorMaker made (its
    "creating herder for SOURCE->TARGET" line) runs against its TARGET, whose id the herder looked up next
    ("Kafka cluster ID: X") or the worker printed itself. The two herders' groups mm2 are two groups, one per
    cluster, each with its own worker's generations, as the 3.5+ log's are."""
    from rebalance_doctor.core import mirror

    shutil.copytree(STORM, tmp_path / "us-west")
    shutil.copytree(STORM, tmp_path / "us-east")
    for log in (tmp_path / "us-east").rglob("*.log"):
        log.write_text(log.read_text(encoding="utf-8").replace(WEST, EAST), encoding="utf-8")
    (tmp_path / "mm2").mkdir()
    text = _mm2_before_35(version, printed)
    (tmp_path / "mm2" / "mm2.log").write_text(text, encoding="utf-8")
    assert "->" not in "".join(line for line in text.splitlines() if "clientId=" in line)
    clients = mirror.of_head(text.encode())
    assert clients is not None and clients.herders == [("us-west", "us-east"), ("us-east", "us-west")]
    assert (clients.of("connect-1"), clients.of("connect-2"), clients.of("connect-3")) == (EAST, WEST, None)
    result = api.analyze([tmp_path])
    assert sorted(g.timeline.group for g in result.groups) == sorted(
        f"{c}/{g}" for c in (WEST, EAST) for g in ("mm2", "payments"))
    for cluster, client, generations in ((EAST, "connect-1", [5, 6, 7]), (WEST, "connect-2", [8, 9, 10])):
        group = result.group(f"{cluster}/mm2")
        assert {e["client"] for e in group.timeline.events if e.get("client")} == {client}
        assert [r.generation for r in group.timeline.rebalances] == generations


def test_a_restart_that_makes_the_herders_in_another_order_leaves_connect_n_to_its_printed_id():
    """connect-N is the N-th herder of a process's start; a log whose second start made them in another order
    cannot say which flow connect-1 is: only an id the worker printed attributes it."""
    from rebalance_doctor.core import mirror

    head = (b"INFO creating herder for a->b (x)\nINFO Kafka cluster ID: bbbbbbbbbb (x)\n"
            b"INFO creating herder for b->a (x)\nINFO Kafka cluster ID: aaaaaaaaaa (x)\n")
    clients = mirror.of_head(head)
    assert (clients.of("connect-1"), clients.of("connect-2")) == ("bbbbbbbbbb", "aaaaaaaaaa")
    again = mirror.of_head(head + b"INFO creating herder for b->a (x)\nINFO creating herder for a->b (x)\n"
                           b"INFO [Worker clientId=connect-2, groupId=g] Cluster ID: cccccccccc (x)\n")
    assert (again.of("connect-1"), again.of("connect-2")) == (None, "cccccccccc")


def test_a_followed_mm2_head_read_in_pieces_learns_its_herders_once():
    """Followed, the head arrives in pieces that overlap (core/clusterid.Head): each herder line counts once, and a
    line cut at a piece's end is read when it is whole, never as the part that came."""
    from rebalance_doctor.core import clusterid

    text = _mm2_before_35("3.3.1", printed=False).encode()
    for size in (7, 50, 333):
        head = clusterid.Head(1 << 20)
        for i in range(0, len(text), size):
            head.feed(text[i:i + size])
        assert head.clients.herders == [("us-west", "us-east"), ("us-east", "us-west")]
        assert head.clients.looked_up == {"us-east": EAST, "us-west": WEST}
        assert (head.clients.of("connect-1"), head.clients.of("connect-2")) == (EAST, WEST)


def test_the_spark_engine_attributes_mirrormaker2_clients_as_the_local_one(spark, mirrored: Path):
    local = api.analyze([mirrored], engine="local")
    on_spark = api.analyze([mirrored], engine="spark", master="local[2]")
    assert sorted(g.timeline.group for g in on_spark.groups) == sorted(g.timeline.group for g in local.groups)
    assert ({(e["source"], e["line"], e["cluster"]) for e in on_spark.event_rows}
            == {(e["source"], e["line"], e["cluster"]) for e in local.event_rows})


# -- MirrorMaker 2 as it really runs: the lab's recordings (two KRaft clusters, MM2 in dedicated mode) -------------

MM2_LAB = sorted(LAB.glob("mm2-*@*"))


@pytest.mark.parametrize("recording", MM2_LAB, ids=[r.name for r in MM2_LAB])
def test_a_recorded_mm2_bundle_keys_each_clusters_groups_and_attributes_mm2s_clients(recording: Path):
    """Clusters A and B (a directory each), MM2 replicating A->B beside them: the groups orders of A and B, which
    share their group.id, are two, and so are MM2's two herders' worker groups (A-mm2 on B for A->B, B-mm2 on A for
    B->A, which a disabled flow still has: it emits heartbeats); every MM2 line of a client runs against the
    cluster its flow's side says, each worker against its TARGET."""
    import tomllib
    lab = tomllib.loads((recording / "lab.toml").read_text(encoding="utf-8"))
    a, b = lab["clusters"]["A"], lab["clusters"]["B"]
    result = api.analyze([recording])
    assert sorted(g.timeline.group for g in result.groups) == sorted([f"{a}/orders", f"{b}/orders",
                                                                      f"{b}/A-mm2", f"{a}/B-mm2"])
    rows = [e for e in result.event_rows if e["source"] == "mm2.log" and e.get("client")]
    assert rows
    for e in rows:      # A->B, A-mm2-A->B-offsets, A->B|MirrorSourceConnector-0|replication-consumer
        flow, _, role = e["client"].partition("|")
        source, rest = flow.split("-mm2-")[-1].split("->")
        target = rest.split("-")[0]      # the aliases hold no dash
        reads_source = role.endswith("|replication-consumer") or "source" in role.split("|")[-1].split("-")
        assert e["cluster"] == lab["clusters"][source if reads_source else target], e
    hurt = result.group(f"{b}/orders")
    assert hurt.findings[0].rule == "heartbeat-expiration"
    assert hurt.findings[0].culprit.host == "app-b2"
    assert not [f for f in result.group(f"{a}/orders").findings if f.severity != "info"]


@pytest.mark.parametrize("recording", MM2_LAB, ids=[r.name for r in MM2_LAB])
def test_a_client_id_that_real_mm2_makes_in_every_flow_states_no_cluster(recording: Path):
    """Each flow's heartbeat connector makes a producer connector-producer-MirrorHeartbeatConnector-0, and each prints
    its own flow's cluster id: the name states two clusters, so none (the hand-made log had it state one)."""
    from rebalance_doctor.core import mirror

    whole = (recording / "mm2.log").read_bytes()
    stated = mirror.stated_by_client(whole)
    assert stated["connector-producer-MirrorHeartbeatConnector-0"] is None
    clients = mirror.of_head(whole)
    assert clients.of("connector-producer-MirrorHeartbeatConnector-0") is None
    clients = mirror.of_head(whole[: whole.index(b"connector-producer-MirrorHeartbeatConnector-0] Cluster ID") + 200])
    assert clients.of("connector-producer-MirrorHeartbeatConnector-0") is not None    # one id printed so far
    clients.read(whole)                                                                # the second: none
    assert clients.of("connector-producer-MirrorHeartbeatConnector-0") is None


@pytest.mark.parametrize("recording", MM2_LAB, ids=[r.name for r in MM2_LAB])
def test_clusters_named_on_the_command_line_name_mm2s_clients_too(recording: Path):
    """--cluster A=... --cluster B=... names the directories, not MM2's log beside them, whose clients print the
    clusters' ids: a file under A states A's id, so A's id is A. MM2's worker groups are then A/B-mm2 and B/A-mm2,
    one group each with the coordinator's lines of the named broker logs (keyed by the id, the worker's lines
    made a second, broker-less group of each)."""
    result = api.analyze([recording], clusters={str(recording / "A"): "A", str(recording / "B"): "B"})
    assert sorted(g.timeline.group for g in result.groups) == ["A/B-mm2", "A/orders", "B/A-mm2", "B/orders"]
    for name in ("A/B-mm2", "B/A-mm2"):
        sources = {e["source"] for e in result.group(name).timeline.events}
        assert "mm2.log" in sources and any(s.endswith(".log") and "/kafka-" in s for s in sources), sources
    assert result.group("B/orders").findings[0].rule == "heartbeat-expiration"


def test_the_spark_engine_names_mm2s_clients_by_the_clusters_named_as_the_local_one(spark):
    recording = MM2_LAB[0]
    clusters = {str(recording / "A"): "A", str(recording / "B"): "B"}
    on_spark = api.analyze([recording], clusters=clusters, engine="spark", master="local[2]")
    assert sorted(g.timeline.group for g in on_spark.groups) == ["A/B-mm2", "A/orders", "B/A-mm2", "B/orders"]
    named = {(f.cluster_id, f.cluster_name) for f in on_spark.stats.files if f.cluster_name}
    assert {name for _, name in named} == {"A", "B"} and all(i and i not in ("A", "B") for i, _ in named)


@pytest.mark.parametrize("recording", MM2_LAB, ids=[r.name for r in MM2_LAB])
def test_follow_names_mm2s_clients_by_the_clusters_named_as_analyze(recording: Path):
    from rebalance_doctor.core.options import ReadOptions
    from rebalance_doctor.live import Live
    from rebalance_doctor.rules.config import load

    named = {str(recording / "A"): "A", str(recording / "B"): "B"}
    ticks = iter(range(1, 10**9))
    live = Live([str(recording)], ReadOptions(clusters=named), load(None), clock=lambda: float(next(ticks)))
    try:
        live.step(final=True)
        result = live.result()
    finally:
        live.close()
    assert sorted(g.timeline.group for g in result.groups) == ["A/B-mm2", "A/orders", "B/A-mm2", "B/orders"]
    assert result.group("B/orders").findings[0].rule == "heartbeat-expiration"
