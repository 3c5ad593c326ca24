"""`analyze --redact`: every format of every shipped incident names no host, IP, group, topic, member, client
or instance of the input; placeholders are stable (keyed: the same across runs and reports); the mapping
file only on request; Kafka's words, config names and rule ids stay (report/redact.py)."""

from __future__ import annotations

import io
import json
import re
from functools import lru_cache
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

import rebalance_doctor as rd
from rebalance_doctor.cli.app import app
from rebalance_doctor.report import html as html_report, human, markdown
from rebalance_doctor.report.redact import kafka_words

REPO = Path(__file__).resolve().parents[1]
INCIDENTS = sorted(p for p in (REPO / "fixtures" / "incidents").iterdir() if (p / "expected.toml").is_file())
STORM = REPO / "fixtures" / "incidents" / "poll-timeout-storm"
IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
runner = CliRunner()


@lru_cache(maxsize=None)
def plain(incident: Path):
    return rd.analyze(str(incident))


def identifiers(incident: Path) -> set[str]:
    """What the unredacted analysis knows of the input's names, and every IPv4 address in its logs."""
    a = plain(incident)
    names: set[str] = set()
    for e in a.event_rows:
        for column in ("host", "group", "member", "client", "instance", "leader"):
            if e.get(column):
                names.add(e[column])
        if e.get("client_host"):
            names.add(e["client_host"].lstrip("/"))
        for partition in e.get("partitions") or ():
            names.add(partition.rpartition("-")[0])
    for g in a.groups:
        names.add(g.timeline.group)
        names.update(g.timeline.hosts)
    names.update(f.host for f in a.stats.files)
    for path in incident.rglob("*"):
        if path.is_file() and path.name != "expected.toml":
            names.update(ip for ip in IPV4.findall(path.read_text(errors="replace"))
                         if all(int(o) < 256 for o in ip.split(".")))
    for name in list(names):     # a member id's UUID, and its head as titles cut it, are its name too
        for uuid in UUID.findall(name):
            names.update((uuid, uuid[:8]))
    stop = kafka_words()
    return {n for n in names if n and len(n) >= 3 and not n.isdigit() and n not in stop and n.lower() not in stop}


def outputs(result) -> dict[str, str]:
    """Every format, rendered from the Python API as the CLI renders it (the human report unwrapped)."""
    def terminal(**options) -> str:
        out = io.StringIO()
        human.render(result, Console(file=out, width=10_000, color_system=None, highlight=False), **options)
        return out.getvalue()

    page = result.to_html()
    for asset in ("report.css", "report.js"):      # the page's own code, not the report's data
        page = page.replace(html_report._asset(asset), "")
    return {"human": terminal(), "human --details": terminal(details=True), "human --brief": terminal(brief=True),
            "json": result.to_json(), "markdown": markdown.render(result),
            "markdown --brief": markdown.render(result, brief=True), "html": page}


def left(text: str, names: set[str]) -> list[str]:
    """The names that occur in text as a whole token (no letter, digit or _ on either side)."""
    found = []
    for name in names:
        start = text.find(name)
        while start >= 0:
            before = text[start - 1] if start else " "
            after = text[start + len(name):start + len(name) + 1] or " "
            if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
                found.append(f"{name!r} in ...{text[max(0, start - 60):start + len(name) + 60]!r}...")
                break
            start = text.find(name, start + 1)
    return found


@pytest.mark.parametrize("incident", INCIDENTS, ids=lambda p: p.name)
def test_no_identifier_is_left_in_any_format(incident: Path):
    names = identifiers(incident)
    assert names, "the incident names something"
    redacted = rd.analyze(str(incident), redact=True)
    assert redacted.redaction.skipped == set(), "every object of the analysis was walked"
    mapped = {m["value"] for m in redacted.redaction.mapping()}
    for fmt, text in outputs(redacted).items():
        assert left(text, names) == [], f"{incident.name}, {fmt}"
    assert {g.timeline.group for g in plain(incident).groups} - kafka_words() <= mapped
    # The analysis is the same one: same groups, findings and rebalances, only names changed.
    assert [f.rule for f in redacted.findings] == [f.rule for f in plain(incident).findings]
    assert len(redacted.rebalances) == len(plain(incident).rebalances)


def test_placeholders_are_stable_and_kafka_words_stay():
    result = rd.analyze(str(STORM), redact=True)
    mapping = {m["value"]: m["placeholder"] for m in result.redaction.mapping()}
    assert len(set(mapping.values())) == len(mapping), "one placeholder per value"
    assert mapping["payments"] == "group-A" and mapping["node2"].startswith("host-")
    assert mapping["consumer-payments-1"] == "client-1"
    members = [v for v, p in mapping.items() if p.startswith("member-")]
    assert members and all(v.startswith("consumer-payments-1-") for v in members), "a member id is one member"
    assert [p for v, p in mapping.items() if v == "10.0.105.129"] == ["10.x.x.1"]
    doc = json.loads(result.to_json())
    culprits = {r["culprit"]["client"] for g in doc["groups"] for r in g["rebalances"] if r["culprit"]}
    assert culprits == {"client-1"}, "the same client is the same placeholder everywhere"
    evidence = doc["findings"][0]["evidence"][0]
    assert evidence["source"] == f"{mapping['node2']}.log"
    assert "[Consumer clientId=client-1, groupId=group-A] consumer poll timeout has expired" in evidence["text"]
    assert "org.apache.kafka.clients.consumer.internals.ConsumerCoordinator" in evidence["text"]
    for fmt, text in outputs(result).items():
        assert "poll-timeout" in text and "max.poll.interval.ms" in text, fmt
    assert doc["redaction"] == {"keyed": False, "placeholders": len(mapping)}
    assert "redaction" not in plain(STORM).to_dict()
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((REPO / "docs" / "schema" / "analyze.json").read_text())
    assert not list(jsonschema.Draft202012Validator(schema).iter_errors(doc))


def test_a_key_gives_the_same_placeholders_in_every_run_and_report():
    one = rd.analyze(str(STORM), redact_key="incident-4711")
    again = rd.analyze(str(STORM), redact_key="incident-4711")
    other = rd.analyze(str(STORM), redact_key="another-key")
    assert markdown.render(one) == markdown.render(again)
    assert one.to_dict()["groups"] == again.to_dict()["groups"]
    assert markdown.render(one) != markdown.render(other)
    keyed = {m["value"]: m["placeholder"] for m in one.redaction.mapping()}
    assert re.fullmatch(r"group-[0-9A-F]{8}", keyed["payments"]) and re.fullmatch(r"host-[0-9a-f]{8}", keyed["node2"])
    # A second report of the same incident, from one host's log only, names that host and group the same way.
    part = rd.analyze(str(STORM / "node2.log"), redact_key="incident-4711")
    partial = {m["value"]: m["placeholder"] for m in part.redaction.mapping()}
    assert partial["payments"] == keyed["payments"] and partial["node2"] == keyed["node2"]
    assert partial["consumer-payments-1"] == keyed["consumer-payments-1"]


def test_the_mapping_file_is_written_only_when_asked(tmp_path: Path):
    result = runner.invoke(app, ["analyze", str(STORM), "--redact", "--format", "json", "-q"])
    assert result.exit_code == 1, result.output
    assert json.loads(result.stdout)["answer"]["group"] == "group-A"
    assert list(tmp_path.iterdir()) == []
    target = tmp_path / "map.json"
    result = runner.invoke(app, ["analyze", str(STORM), "--redact-map", str(target), "--format", "markdown", "-q"])
    assert result.exit_code == 1, result.output
    document = json.loads(target.read_text())
    assert document["keyed"] is False
    mapping = {m["value"]: m for m in document["mapping"]}
    assert mapping["payments"] == {"kind": "group", "value": "payments", "placeholder": "group-A"}
    assert "group-A" in result.stdout and "payments" not in result.stdout
    assert set(m["kind"] for m in document["mapping"]) >= {"group", "host", "client", "member", "ip"}
    assert target.stat().st_mode & 0o077 == 0, "a new mapping file is private"
    result = runner.invoke(app, ["analyze", str(STORM), "--redact-map", "-", "-q"])
    assert result.exit_code == 2


def test_html_file_and_keyed_cli(tmp_path: Path):
    page = tmp_path / "incident.html"
    result = runner.invoke(app, ["analyze", str(STORM), "--redact-key", "k", "--html", str(page), "--brief", "-q"])
    assert result.exit_code == 1, result.output
    text = page.read_text()
    assert left(text, identifiers(STORM)) == []
    assert "payments" not in result.stdout and "node2" not in result.stdout


def test_lines_in_kafka_words_lose_their_names_and_keep_kafka_s():
    """Transactional ids, IPv6 addresses, host names with a domain, URLs, bootstrap.servers; a host named
    like one of Kafka's words keeps its name (assets/redact.toml)."""
    from rebalance_doctor.report.redact import Redactor

    lines = [
        "[Producer clientId=orders-tx-producer, transactionalId=orders-tx-7] Transiting to fatal error state "
        "due to org.apache.kafka.common.errors.ProducerFencedException",
        "Discovered group coordinator broker-3.prod.example.com:9092 (id: 2147483644 rack: null)",
        "Joined group at generation 12 with protocol version 2 and got assignment: Assignment{error=0, "
        "leader='connect-1-8beb81b1', leaderUrl='http://connect-1.internal:8083/', offset=42}",
        "Member m1 in group billing has failed, clientHost=/fd12:3456:789a::17, removing it from the group",
        "\tbootstrap.servers = [kafka-a.corp:9092, 10.20.30.40:9092]",
        "[GroupCoordinator 1]: Preparing to rebalance group payments in state PreparingRebalance with old "
        "generation 3 (__consumer_offsets-28) (kafka.coordinator.group.GroupCoordinator)",
        "10:00:01.250 INFO :: Kafka version: 3.7.0 :: commitId: 2ae524ed625438c5 at 10.1.2.3.4",
    ]
    redactor = Redactor()
    for line in lines:
        redactor.know_text(line)
    redactor.know("payments", "group")
    redactor.know("kafka", "host")            # docker compose's service name: Kafka's word, kept
    redactor.know("__consumer_offsets", "topic")   # Kafka's internal topics are Kafka's
    out = [redactor.text(line) for line in lines]
    joined = "\n".join(out)
    for name in ("orders-tx-producer", "orders-tx-7", "broker-3.prod.example.com", "connect-1.internal",
                 "fd12:3456:789a::17", "kafka-a.corp", "10.20.30.40", "payments"):
        assert name not in joined
    assert out[0].startswith("[Producer clientId=client-1, transactionalId=txn-1] Transiting to fatal error state "
                             "due to org.apache.kafka.common.errors.ProducerFencedException")
    assert "coordinator host-1:9092 (id: 2147483644 rack: null)" in out[1]
    assert "leaderUrl='http://host-2:8083/'" in out[2] and "generation 12" in out[2]
    assert "clientHost=/x:x::1," in out[3]
    assert out[4] == "\tbootstrap.servers = [host-3:9092, 10.x.x.1:9092]"
    assert out[6] == lines[6], "times, separators, versions and a 5-part number are not addresses"
    assert out[5] == ("[GroupCoordinator 1]: Preparing to rebalance group group-A in state PreparingRebalance with "
                      "old generation 3 (__consumer_offsets-28) (kafka.coordinator.group.GroupCoordinator)")


def test_the_key_from_the_environment_is_used_only_with_redact():
    env = {"REBALANCE_DOCTOR_REDACT_KEY": "incident-4711"}
    plain_run = runner.invoke(app, ["analyze", str(STORM), "--format", "json", "-q"], env=env)
    assert json.loads(plain_run.stdout)["answer"]["group"] == "payments"
    keyed = runner.invoke(app, ["analyze", str(STORM), "--redact", "--format", "json", "-q"], env=env)
    group = rd.analyze(str(STORM), redact_key="incident-4711").answer.finding.group
    assert json.loads(keyed.stdout)["answer"]["group"] == group and re.fullmatch(r"group-[0-9A-F]{8}", group)


def test_redaction_changes_nothing_outside_its_report():
    """Redaction rewrites the analysis in place: no object shared with later analyses (caches of packs,
    vocabularies, thresholds) may change, so a plain analysis after a redacted one is as before."""
    chosen = [p for p in INCIDENTS if p.name in ("streams-thread-died", "connect-worker-lost")]

    def report(incident: Path) -> str:
        result = rd.analyze(str(incident))
        return markdown.render(result) + json.dumps(result.to_dict()["groups"])

    before = [report(p) for p in chosen]
    for incident in chosen:
        rd.analyze(str(incident), redact=True)
    assert [report(p) for p in chosen] == before


# -- every other command that prints identifiers ---------------------------------------------------------


def _followed(incident: Path, tmp_path: Path, redactor):
    """The incident written into a followed directory in two pieces (in-process, as tests/test_follow.py): every
    line and JSON line the follow printed, its live screen, then its final report in every format."""
    from rebalance_doctor.core.options import ReadOptions
    from rebalance_doctor.live import Live
    from rebalance_doctor.report import live as shown
    from rebalance_doctor.report.redact import redact
    from rebalance_doctor.rules.config import load

    files = [p for p in sorted(incident.rglob("*")) if p.is_file() and p.name != "expected.toml"]
    target = tmp_path / "followed"
    for path in files:
        (target / path.relative_to(incident)).parent.mkdir(parents=True, exist_ok=True)
    ticks = iter(range(1, 10**9))
    live = Live([str(target)], ReadOptions(), load(None), clock=lambda: float(next(ticks)), redactor=redactor)
    printed: dict[str, list[str]] = {"line": [], "json line": [], "screen": [], "note": []}
    for half in range(2):
        for path in files:
            data = path.read_bytes()
            with open(target / path.relative_to(incident), "ab") as out:
                out.write(data[len(data) * half // 2:len(data) * (half + 1) // 2])
        for final in (False, half == 1):
            for change in live.step(final=final):
                printed["line"].append(shown.line(change, redactor.text))
                printed["json line"].append(shown.json_line(change, redactor))
            printed["note"] += [redactor.text(n) for n in live.take_notes()]
            screen = io.StringIO()
            Console(file=screen, width=10_000, color_system=None).print(shown.screen(live, [], redactor.text))
            printed["screen"].append(screen.getvalue())
    result = live.result()
    live.close()
    result.redaction = redact(result, redactor=redactor)
    texts = {f"follow {k}": "\n".join(v) for k, v in printed.items()}
    texts.update({f"follow final {k}": v for k, v in outputs(result).items()})
    return texts, live


@pytest.mark.parametrize("incident", INCIDENTS, ids=lambda p: p.name)
def test_no_identifier_is_left_while_following(incident: Path, tmp_path: Path):
    """`analyze --follow --redact`: the lines, JSON lines and screens printed as the lines come, and the final
    report, name no identifier; the final report's placeholders are those of the lines printed before it."""
    from rebalance_doctor.report.redact import Redactor

    names = identifiers(incident)
    redactor = Redactor()
    texts, live = _followed(incident, tmp_path, redactor)
    for fmt, text in texts.items():
        assert left(text, names) == [], f"{incident.name}, {fmt}"
    lines = texts["follow line"]
    if plain(incident).findings:
        assert lines, "findings were shown while following"
        first = plain(incident).findings[0]
        placeholder = {m["value"]: m["placeholder"] for m in redactor.mapping()}.get(first.group)
        if placeholder:
            assert f"group {placeholder}" in lines and f'"group": "{placeholder}"' in texts["follow final json"]


def _cli(*args, env=None) -> str:
    result = runner.invoke(app, list(map(str, args)), env=env)
    assert result.exit_code in (0, 1), result.output
    return result.stdout


@pytest.mark.parametrize("incident", INCIDENTS, ids=lambda p: p.name)
def test_no_identifier_is_left_in_events_and_query(incident: Path, tmp_path: Path):
    """`events --redact` in its three formats (with --stats and --unmatched) and `query --redact` over each table
    (JSON and the terminal table) name no identifier of the input."""
    import pyarrow.parquet as pq

    names = identifiers(incident)
    texts = {"events jsonl": _cli("events", incident, "--redact", "-q")}
    _cli("events", incident, "--redact", "-q", "-o", tmp_path / "e.csv", "--stats", tmp_path / "stats.json",
         "--unmatched", tmp_path / "miss.jsonl")
    _cli("events", incident, "--redact", "-q", "-o", tmp_path / "e.parquet")
    texts["events csv"] = (tmp_path / "e.csv").read_text()
    texts["events --stats"] = (tmp_path / "stats.json").read_text()
    texts["events --unmatched"] = (tmp_path / "miss.jsonl").read_text()
    texts["events parquet"] = json.dumps(pq.read_table(tmp_path / "e.parquet").to_pylist(), default=str)
    assert json.loads(texts["events jsonl"].splitlines()[0])["host"].startswith("host-")
    texts["query table"] = _cli("query", "select * from findings", incident, "--redact", "-q",
                                "--save", tmp_path / "tables.duckdb")
    duckdb = pytest.importorskip("duckdb")
    with duckdb.connect(str(tmp_path / "tables.duckdb"), read_only=True) as saved:
        for table in ("events", "rebalances", "findings", "files"):     # every table, as --save keeps it
            texts[f"query {table}"] = json.dumps(saved.execute(f"select * from {table}").fetchall(), default=str)
        assert saved.execute("select count(*) from events").fetchone()[0] == len(texts["events jsonl"].splitlines())
    texts["query over events parquet"] = _cli("query", "select * from findings", tmp_path / "e.parquet", "--redact",
                                              "-f", "json", "-q")
    for fmt, text in texts.items():
        assert left(text, names) == [], f"{incident.name}, {fmt}"


def test_query_literals_are_redacted_so_filters_still_match(tmp_path: Path):
    sql = """select "group", count(*) as n from rebalances where "group" = 'payments' group by 1"""
    rows = json.loads(_cli("query", sql, STORM, "--redact", "-f", "json", "-q"))
    assert rows == [{"group": "group-A", "n": len(plain(STORM).rebalances)}]
    target = tmp_path / "map.json"
    _cli("query", sql, STORM, "--redact-map", target, "-f", "json", "-q")
    assert {m["value"]: m["placeholder"] for m in json.loads(target.read_text())["mapping"]}["payments"] == "group-A"


def test_redaction_where_it_cannot_apply_is_refused_in_one_line(tmp_path: Path):
    for args in (["batch", STORM, "--out", tmp_path / "out", "--redact"],
                 ["events", STORM, "--engine", "spark", "--redact-key", "k"],
                 ["query", "select 1", tmp_path, "--redact"]):
        if args[0] == "query":      # a batch output directory
            (tmp_path / "events").mkdir(exist_ok=True)
            (tmp_path / "manifest.json").write_text("{}")
        result = runner.invoke(app, list(map(str, args)))
        assert result.exit_code == 2, (args, result.output)
        assert result.output.count("\n") == 1 and "--redact is not available" in result.output, result.output
    assert not (tmp_path / "out").exists()


def test_follow_redact_on_the_command_line(tmp_path: Path):
    """`analyze --follow --redact --format json` in a process: its JSON lines and final document name group-A."""
    import os
    import signal
    import subprocess
    import sys
    import time

    target = tmp_path / "logs"
    target.mkdir()
    mapping = tmp_path / "map.json"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen([sys.executable, "-m", "rebalance_doctor.cli", "analyze", "--follow", str(target),
                                "--redact-map", str(mapping), "--format", "json", "-q"], cwd=REPO, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        (target / "node2.log").write_bytes((STORM / "node2.log").read_bytes())
        while not mapping.exists() and time.monotonic() < deadline:
            time.sleep(1.0)
            if time.monotonic() > deadline - 27:
                break
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 1, err
    lines = out.splitlines()
    assert json.loads(lines[-1])["answer"]["group"] == "group-A"
    assert "payments" not in out and "node2" not in out and "node2" not in err, (out, err)
    assert {m["value"] for m in json.loads(mapping.read_text())["mapping"]} >= {"payments", "node2"}
