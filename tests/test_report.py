"""The reports of `analyze`: the terminal report (overview first, 80 columns, each line once),
Markdown, the HTML page's static shape (self-contained, escaped), and the JSON Schema."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rebalance_doctor import api
from rebalance_doctor.cli.app import app
from rebalance_doctor.report import html as html_report, lanes
from rebalance_doctor.report.evidence import EvidenceIndex, abbreviate_logger
from rebalance_doctor.report.markdown import code

REPO = Path(__file__).resolve().parents[1]
INCIDENTS = REPO / "fixtures" / "incidents"
STORM = str(INCIDENTS / "poll-timeout-storm")
HEALTHY = str(INCIDENTS / "healthy-scale-out")
SCHEMA = json.loads((REPO / "docs" / "schema" / "analyze.json").read_text(encoding="utf-8"))
runner = CliRunner()


def invoke(*args, columns: int = 120, **kwargs):
    return runner.invoke(app, list(args), env={"COLUMNS": str(columns)}, **kwargs)


# ---------------------------------------------------------------------------- terminal report


def test_overview_comes_first_and_names_the_answer():
    out = invoke("analyze", STORM, "-q").stdout
    answer = out[out.index("ANSWER"):out.index("groups")]
    assert "CRITICAL poll-timeout in group payments" in answer
    assert "culprit  consumer-payments-1@node2" in answer
    assert "caused   10 rebalance(s); 2 member(s) rejoined" in answer
    assert "symptoms: membership-flapping, missed-rebalance, rebalance-storm" in " ".join(answer.split())
    assert "when     2024-03-05 10:00:00 .. 10:08:40 UTC" in answer
    assert "hurt     payments (10 rebalance(s)" in answer
    read = out.index("read     4 file(s)")
    assert out.index("ANSWER") < out.index("groups") < read < out.index("generation timeline")


def test_brief_prints_only_the_answer():
    out = invoke("analyze", STORM, "-q", "--brief").stdout
    assert out.lstrip().startswith("ANSWER") and "evidence" not in out and "timeline" not in out
    assert len(out.strip().splitlines()) < 15


def test_healthy_answer_says_so():
    result = invoke("analyze", HEALTHY, "-q", "--brief")
    assert result.exit_code == 0
    assert "No harmful rebalance found" in result.stdout


@pytest.mark.parametrize("incident", sorted(p.name for p in INCIDENTS.iterdir() if p.is_dir()))
def test_readable_at_80_columns_and_each_evidence_line_once(incident):
    out = invoke("analyze", str(INCIDENTS / incident), "-q", columns=80).stdout
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    refs = re.findall(r"^    (\S+:\d+)(?:  |$)", out, re.M)
    assert len(refs) == len(set(refs)), "an evidence line printed twice"
    assert not [line for line in lines if line != line.rstrip()], "trailing blanks"


def test_the_timeline_at_80_columns_keeps_names_whole():
    """A terminal too narrow for the generation table gets one block per rebalance: rich would
    otherwise fold the operation and member columns to a few characters ("poll-timeo" / "ut")."""
    out = invoke("analyze", STORM, "-q", columns=80).stdout
    timeline = out[out.index("generation timeline"):]
    assert "1  12->13  10:00:00.410  3.1s  poll-timeout  stable  harmful" in timeline
    assert timeline.count("by consumer-payments-1@node2 · members") == 10
    assert max(len(line) for line in timeline.splitlines()) <= 80
    wide = invoke("analyze", STORM, "-q", columns=160).stdout
    assert re.search(r"^1 +12->13 +10:00:00.410 +3.1s +poll-timeout +consumer-payments-1@node2 +2 +stable +harmful$",
                     wide, re.M), "a wide terminal keeps the table"


def test_clock_corrections_are_one_note_unless_details():
    """The "clocks" line gives every offset; five hosts off were ten more lines of notes."""
    path = str(INCIDENTS / "eager-assignor")
    out = invoke("analyze", path, "-q", columns=200).stdout
    assert "note: 5 hosts' clocks were off and their times corrected" in out and "note: clock of" not in out
    assert "search-7d9f5 -3598783 ms" in out
    details = invoke("analyze", path, "-q", "--details", columns=200).stdout
    assert details.count("note: clock of") == 5


def test_evidence_shows_the_whole_message_with_the_envelope_shortened():
    out = invoke("analyze", STORM, "-q", columns=1000).stdout
    message = ("consumer poll timeout has expired. This means the time between subsequent calls to poll() was longer "
               "than the configured max.poll.interval.ms, which typically implies that the poll loop is spending too "
               "much time processing messages. You can address this either by increasing max.poll.interval.ms or by "
               "reducing the maximum size of batches returned in poll() with max.poll.records.")
    assert f"node2.log:4  10:00:00,410 WARN ConsumerCoordinator: [Consumer clientId=consumer-payments-1, groupId=payments] {message}" in out
    assert "org.apache.kafka.clients.consumer.internals" not in out
    # The same message again is referred to, not repeated.
    assert "node2.log:29  10:02:03,410 WARN ConsumerCoordinator (the same message as node2.log:4)" in out


def test_screen_per_group_points_to_details_and_html(monkeypatch):
    from rebalance_doctor.report import human

    out = invoke("analyze", STORM, "-q").stdout
    assert "more evidence line(s): --details or --html" in out
    monkeypatch.setattr(human, "FINDINGS_IN_FULL", 0)
    assert "1 more finding(s) (--details or --html)" in invoke("analyze", STORM, "-q").stdout
    details = invoke("analyze", STORM, "-q", "--details").stdout
    assert "--details or" not in details and "poll-timeout: consumer-payments-1@node2 exceeded" in details
    assert "2024-03-05 10:00:00,410 WARN  [kafka-coordinator-heartbeat-thread | payments]" in details, \
        "--details shows the lines as written"


def test_timeline_rows_are_limited_and_say_how_to_see_them(tmp_path: Path, monkeypatch):
    out = invoke("analyze", STORM, "-q", "--rows", "4").stdout
    assert "6 more: --details or --html" in out
    monkeypatch.chdir(tmp_path)
    with_html = invoke("analyze", STORM, "-q", "--rows", "4", "--html", "r.html").stdout
    assert "6 more: --details or r.html" in with_html and (tmp_path / "r.html").is_file()


def test_thresholds_from_pyproject_are_named_in_the_header(tmp_path: Path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[tool.rebalance-doctor.poll-timeout]\nenabled = false\n')
    monkeypatch.chdir(tmp_path)
    out = invoke("analyze", STORM, "-q").stdout
    header = " ".join(out[:out.index("ANSWER")].split())
    assert f"overridden by {tmp_path / 'pyproject.toml'} [tool.rebalance-doctor]" in header
    assert "poll-timeout.enabled = False" in header
    doc = json.loads(invoke("analyze", STORM, "-q", "-f", "json").stdout)
    assert doc["config"]["sources"] == [f"{tmp_path / 'pyproject.toml'} [tool.rebalance-doctor]"]
    assert doc["config"]["overrides"] == {"poll-timeout.enabled": False}


def test_hostile_log_text_is_made_visible_in_every_report(tmp_path: Path):
    log = tmp_path / "node9.log"
    log.write_text("[2024-03-05 10:00:00,000] INFO [Consumer clientId=c-1, groupId=g] Member c-1 sending LeaveGroup "
                   "request to coordinator b:9092 (id: 1 rack: null) due to consumer poll timeout has expired. "
                   "\x1b]0;owned\x07\u202e<script>alert(1)</script> "
                   "(org.apache.kafka.clients.consumer.internals.AbstractCoordinator)\n")
    human = invoke("analyze", str(log), "-q").stdout
    assert "\x1b" not in human and "\u202e" not in human and "\\x1b]0;owned\\x07\\u202e" in human
    markdown = invoke("analyze", str(log), "-q", "-f", "markdown").stdout
    assert "\x1b" not in markdown and "\u202e" not in markdown
    page = tmp_path / "r.html"
    invoke("analyze", str(log), "-q", "--html", str(page))
    text = page.read_text(encoding="utf-8")
    assert "\x1b" not in text and "\u202e" not in text
    assert "<script>alert(1)" not in text and "&lt;script&gt;alert(1)" in text
    data = text[text.index('id="report-data">'):]
    assert "\\u003cscript\\u003ealert(1)" in data[:data.index("</script>")]


# ---------------------------------------------------------------------------------- evidence


def test_envelope_shortening_keeps_the_message():
    assert abbreviate_logger("org.apache.kafka.clients.consumer.internals.AbstractCoordinator") == \
        "o.a.k.c.c.i.AbstractCoordinator"
    analysis = api.analyze(STORM)
    group = analysis.groups[0]
    broker = next(r.evidence("member.leave")[0] for r in group.timeline.rebalances if r.evidence("member.leave"))
    line = EvidenceIndex(analysis.stats).line(broker)
    assert line.envelope == "10:00:00,412 INFO GroupCoordinator"
    assert line.message.startswith("[GroupCoordinator 1]: Member MemberMetadata(memberId=consumer-payments-1-")
    assert line.message.endswith("client reason: consumer poll timeout has expired.")


# ---------------------------------------------------------------------------------- markdown


def test_markdown_has_the_answer_a_rebalance_table_and_evidence_blocks():
    out = invoke("analyze", STORM, "-q", "-f", "markdown").stdout
    assert out.startswith("## rebalance-doctor: critical `poll-timeout` in group payments")
    assert "- **What**: consumer-payments-1@node2 exceeded max.poll.interval.ms (5 poll timeout(s))" in out
    assert "- **Culprit**: consumer-payments-1@node2 (host node2)" in out
    assert "| # | gen | start (UTC) | took | operation | verdict | by | leader | members | outcome |" in out
    assert "| 1 | 12->13 | 10:00:00.410 | 3.1s | poll-timeout | harmful |" in out
    blocks = re.findall(r"```text\n(.*?)\n```", out, re.S)
    assert any(b.startswith("node2.log:4  2024-03-05 10:00:00,410 WARN") for b in blocks)
    brief = invoke("analyze", STORM, "-q", "-f", "markdown", "--brief").stdout
    assert "| # |" not in brief and "**Fix**" in brief


def test_a_code_block_cannot_be_closed_by_the_log_text():
    assert code("a ``` b") == "````text\na ``` b\n````"


# -------------------------------------------------------------------------------- HTML (static)


def test_html_is_self_contained(tmp_path: Path):
    page = tmp_path / "r.html"
    result = invoke("analyze", STORM, "-q", "--html", str(page))
    assert result.exit_code == 1
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text), "a resource from the network"
    assert not re.search(r"<(link|script)[^>]+(src|href)=", text.replace('<link rel="icon" href="data:,">', ""))
    assert "@@" not in text, "a template marker left in the page"
    assert 'id="answer"' in text and "consumer-payments-1@node2" in text


def test_html_file_is_written_whole_or_not_at_all(tmp_path: Path):
    missing_dir = tmp_path / "no" / "such" / "dir" / "r.html"
    result = invoke("analyze", STORM, "-q", "--html", str(missing_dir))
    assert result.exit_code == 2 and "cannot write" in result.stderr
    assert not list(tmp_path.rglob("*.tmp")) and not missing_dir.exists()


def test_html_marks_are_aggregated_per_bucket(monkeypatch):
    analysis = api.analyze(STORM)
    monkeypatch.setattr(lanes, "BUCKETS", 4)
    coarse = html_report._group_data(analysis.groups[0], html_report._Samples(EvidenceIndex(analysis.stats)))
    monkeypatch.setattr(lanes, "BUCKETS", 3000)
    fine = html_report._group_data(analysis.groups[0], html_report._Samples(EvidenceIndex(analysis.stats)))
    assert len(coarse["marks"]) < len(fine["marks"])
    assert sum(m[3] for m in coarse["marks"]) == sum(m[3] for m in fine["marks"]), "aggregation loses no mark"
    assert all(len(m[4]) <= lanes.SAMPLES_PER_MARK for m in coarse["marks"])
    labels = [(lane["kind"], lane["title"], lane["sub"]) for lane in fine["lanes"]]
    assert labels == [("coordinator", "coordinator", "broker broker-1"), ("consumer", "node1", "consumer-payments-1"),
                      ("consumer", "node2", "consumer-payments-1"), ("consumer", "node3", "consumer-payments-1")]


# ------------------------------------------------------------------------------- JSON Schema


def _validator():
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    return jsonschema.Draft202012Validator(SCHEMA)


def _json_runs():
    runs = [("analyze", str(INCIDENTS / name), "-f", "json", "-q") for name in sorted(os.listdir(INCIDENTS))
            if (INCIDENTS / name).is_dir()]
    runs += [("analyze", str(REPO / "fixtures" / "layouts"), "-f", "json", "-q"),
             ("analyze", STORM, "-f", "json", "-q", "--until", "2024-03-05T10:00:30"),
             ("analyze", STORM, "-f", "json", "-q", "--group", "payments", "--fail-on", "never")]
    return runs


import os  # noqa: E402  (used by the parametrization above)


@pytest.mark.parametrize("args", _json_runs(), ids=lambda a: "-".join(Path(a[1]).name for _ in [0]) + "-" + str(len(a)))
def test_every_json_output_validates_against_the_schema(args):
    validator = _validator()
    result = invoke(*args)
    assert result.exit_code in (0, 1), result.stderr
    doc = json.loads(result.stdout)
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]
    assert doc["schema_version"] == 2
    assert doc["accounting"]["files_read"] >= 1


def test_json_of_stdin_and_of_a_run_without_groups_validates(tmp_path: Path):
    validator = _validator()
    text = (INCIDENTS / "poll-timeout-storm" / "node2.log").read_text(encoding="utf-8")
    doc = json.loads(invoke("analyze", "-", "-f", "json", "-q", input=text).stdout)
    assert not list(validator.iter_errors(doc)) and doc["accounting"]["files"][0]["source"] == "<stdin>"
    noise = tmp_path / "app.log"
    noise.write_text("2024-03-05 10:00:00,000 INFO started\n")
    doc = json.loads(invoke("analyze", str(noise), "-f", "json", "-q").stdout)
    assert not list(validator.iter_errors(doc)) and doc["groups"] == [] and doc["answer"]["healthy"]


def test_the_accounting_table_stacks_rather_than_squeeze_columns_at_80_columns(monkeypatch):
    import io

    from rich.console import Console

    from rebalance_doctor.cli import common

    stats = api.analyze(STORM).stats
    for width in (80, 200):
        buffer = io.StringIO()
        monkeypatch.setattr(common, "stderr", Console(file=buffer, width=width, highlight=False, soft_wrap=True))
        common.print_accounting(stats)
        lines = buffer.getvalue().splitlines()
        table = [line for line in lines[1:] if not line.startswith("skipped:")]
        assert max(len(line) for line in table) <= width
        text = " ".join(buffer.getvalue().split())
        for value in ("node2.log", "log4j-iso-thread", ">3.0", "90", "broker-1/server.log"):
            assert value in text, (width, value)
    assert "host node2 · layout log4j-iso-thread · kafka >3.0 · events 90 · near misses 0" in \
        " ".join(_stacked_80(stats).split())


def _stacked_80(stats) -> str:
    import io

    from rich.console import Console

    from rebalance_doctor.cli import common

    buffer = io.StringIO()
    saved = common.stderr
    common.stderr = Console(file=buffer, width=80, highlight=False, soft_wrap=True)
    try:
        common.print_accounting(stats)
    finally:
        common.stderr = saved
    return buffer.getvalue()


# ---------------------------------------------------------------------------- JSON written in pieces


@pytest.mark.parametrize("incident", ["poll-timeout-storm", "healthy-scale-out", "probing-rebalance-cadence"])
def test_the_json_written_a_piece_at_a_time_is_json_dumps_byte_for_byte(incident, monkeypatch):
    """`analyze --format json` writes the document through report/jsontext.py, group by group and
    rebalance by rebalance: the same text as json.dumps(indent=2) of the whole document."""
    import io

    from rebalance_doctor.report import jsontext

    monkeypatch.setattr(jsontext, "FLUSH_PARTS", 7)   # many writes, each cut in the middle of a group
    result = api.analyze(str(INCIDENTS / incident))
    stream = io.StringIO()
    result.write_json(stream)
    expected = json.dumps(result.to_dict(), indent=2)
    assert stream.getvalue() == expected == result.to_json()
    odd = {"k": [1.5, float("nan"), float("inf"), -0.0, 10**20, True, None, "é\n\"", (), {}, [[]]],
           1: "int key", 2.5: "float key", None: "none key", False: "bool key"}
    assert jsontext.dumps(odd) == json.dumps(odd, indent=2)
    assert jsontext.dumps({"empty": iter(()), "lazy": iter([{"a": iter([1])}])}) == json.dumps(
        {"empty": [], "lazy": [{"a": [1]}]}, indent=2)
