"""An application-wide shutdown as Kafka Streams 4.2.1 logs it (fixtures/lab-excerpts: a lab recording whose
flooding log is cut to its first 3,000 lines): app-2's thread dies and asks every instance to shut down; app-1's
thread hears it and, before KAFKA-20829, writes its rejoin request on every loop of its run loop."""

from __future__ import annotations

from pathlib import Path

from rebalance_doctor import api

EXCERPT = Path(__file__).resolve().parents[1] / "fixtures" / "lab-excerpts" / "streams-application-shutdown@4.2.1"


def test_the_shutdown_is_the_requesting_instances_not_a_hearing_ones():
    result = api.analyze([EXCERPT])
    first = result.findings[0]
    assert (first.rule, first.severity, first.culprit.host) == ("application-shutdown", "critical", "app-2")
    assert first.cause.startswith("app-2 asked the whole application to shut down")
    assert first.summary.startswith("Shutdown of the whole application requested from app-2 for ")
    figures = {f.name: f.value for f in first.figures}
    assert figures["requests"] == 1 and figures["heard"] == 2      # app-2's other thread, app-1's thread
    assert [(e.source, e.line) for e in first.evidence if e.event == "streams.shutdown_requested"] == [
        ("app-2.log", 1071), ("app-2.log", 1102), ("app-1.log", 682)]


def test_each_thread_hearing_it_is_evidence_once(tmp_path):
    # At 3.9.2 the WARN itself floods (KAFKA-19054 throttled it in 4.1): the same line, a thousand times here.
    copy = tmp_path / "incident"
    copy.mkdir()
    for f in EXCERPT.glob("*.log"):
        (copy / f.name).write_bytes(f.read_bytes())
    log = copy / "app-1.log"
    lines = log.read_text().splitlines(keepends=True)
    heard = next(line for line in lines if "Detected that shutdown was requested" in line)
    at = lines.index(heard)
    log.write_text("".join(lines[:at + 1] + [heard] * 1000 + lines[at + 1:]))
    first = api.analyze([copy]).findings[0]
    assert first.rule == "application-shutdown" and first.culprit.host == "app-2"
    assert {f.name: f.value for f in first.figures}["heard"] == 2          # threads, not lines
    assert [(e.source, e.line) for e in first.evidence if "shutdown was requested" in e.text] == [
        ("app-2.log", 1102), ("app-1.log", 682)]
