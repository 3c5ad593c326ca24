"""The Python API for notebooks: rebalance_doctor.analyze(paths, **options) -> Analysis."""

from __future__ import annotations

import copy
import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

import rebalance_doctor
from rebalance_doctor import api
from rebalance_doctor.result import FINDING_COLUMNS, REBALANCE_COLUMNS
from rebalance_doctor.cli.app import app
from rebalance_doctor.core.schema import NAMES
from rebalance_doctor.rules.finding import Finding
from rebalance_doctor.timeline.model import Rebalance

REPO = Path(__file__).resolve().parents[1]
STORM = REPO / "fixtures" / "incidents" / "poll-timeout-storm"


def test_analyze_is_the_package_entry_point_and_returns_typed_records():
    result = rebalance_doctor.analyze(STORM)
    assert isinstance(result, rebalance_doctor.Analysis)
    assert [g.timeline.group for g in result.groups] == ["payments"]
    assert all(isinstance(r, Rebalance) for r in result.rebalances) and len(result.rebalances) == 10
    assert all(isinstance(f, Finding) for f in result.findings)
    assert result.findings[0].rule == "poll-timeout", "most severe first"
    assert result.answer.finding.rule == "poll-timeout" and result.answer.culprit == "consumer-payments-1@node2"
    assert result.stats.files_read == 4 and result.stats.events == 330
    assert "10 rebalance(s)" in repr(result)


def test_tables_are_arrow_with_the_documented_columns():
    result = rebalance_doctor.analyze(str(STORM))
    assert result.events.column_names == list(NAMES) and result.events.num_rows == 330
    assert result.rebalances.to_arrow().column_names == [c.name for c in REBALANCE_COLUMNS]
    assert result.findings.to_arrow().column_names == [c.name for c in FINDING_COLUMNS]
    assert result.findings.to_arrow().num_rows == len(result.findings)
    files = result.files.to_pylist()
    assert {f["source"]: f["status"] for f in files}["expected.toml"] == "skipped"
    ts = result.events.column("ts").type
    assert str(ts) == "timestamp[us, tz=UTC]"


def test_to_pandas_where_pandas_is_installed():
    pandas = pytest.importorskip("pandas")
    result = rebalance_doctor.analyze(STORM)
    frame = result.rebalances.to_pandas()
    assert isinstance(frame, pandas.DataFrame) and list(frame["trigger_kind"][:2]) == ["poll-timeout", "new-member"]
    assert len(result.findings.to_pandas()) == len(result.findings)
    assert len(result.events.to_pandas()) == 330


def test_to_json_is_the_cli_json():
    result = rebalance_doctor.analyze([str(STORM)])
    cli = CliRunner().invoke(app, ["analyze", str(STORM), "-q", "-f", "json"])
    mine, theirs = json.loads(result.to_json()), json.loads(cli.stdout)
    for doc in (mine, theirs):
        doc["accounting"]["seconds"] = 0
    assert mine == theirs


def test_repr_html_is_the_reports_summary_without_scripts():
    fragment = rebalance_doctor.analyze(STORM)._repr_html_()
    assert 'id="answer"' in fragment and "consumer-payments-1@node2" in fragment and "<table" in fragment
    assert "<script" not in fragment


def test_markdown_and_html_from_the_api(tmp_path: Path):
    result = rebalance_doctor.analyze(STORM)
    assert result.to_markdown().startswith("## rebalance-doctor: critical `poll-timeout`")
    page = tmp_path / "r.html"
    result.write_html(page)
    assert page.read_text(encoding="utf-8") == result.to_html()


def test_options_filter_and_config(tmp_path: Path):
    early = rebalance_doctor.analyze(STORM, until="2024-03-05T10:00:30")
    assert len(early.rebalances) == 2
    aware = rebalance_doctor.analyze(STORM, since=datetime(2024, 3, 5, 10, 3, tzinfo=timezone.utc))
    assert all(r.start >= datetime(2024, 3, 5, 10, 3, tzinfo=timezone.utc) for r in aware.rebalances)
    config = tmp_path / "thresholds.toml"
    config.write_text("[poll-timeout]\nenabled = false\n")
    quiet = rebalance_doctor.analyze(STORM, config=config)
    assert "poll-timeout" not in {f.rule for f in quiet.findings}
    assert quiet.config.sources == [str(config)]


def test_a_filter_that_matches_nothing_raises_and_says_what_exists():
    with pytest.raises(api.NothingMatched) as caught:
        rebalance_doctor.analyze(STORM, groups=["nope"])
    assert "payments (" in str(caught.value) and caught.value.available["groups"]["payments"] > 0
    with pytest.raises(api.NothingMatched, match=r"in the input; it holds groups payments \(\d+ events\), from 2024-03-05T10:00:00Z to 2024-03-05T10:08:54Z"):
        rebalance_doctor.analyze(STORM, since="2030-01-01")
    with pytest.raises(api.AnalysisError, match="cannot read 'soon' as a time"):
        rebalance_doctor.analyze(STORM, since="soon")


def test_events_given_as_a_table_are_diagnosed_alike(tmp_path: Path):
    from_logs = rebalance_doctor.analyze(STORM)
    again = rebalance_doctor.analyze(events=from_logs.events)
    assert [(r.generation, r.trigger_kind, r.outcome) for r in again.rebalances] == \
        [(r.generation, r.trigger_kind, r.outcome) for r in from_logs.rebalances]
    assert [f.rule for f in again.findings] == [f.rule for f in from_logs.findings]
    import pyarrow.parquet as pq

    pq.write_table(from_logs.events, tmp_path / "events.parquet")
    from_file = rebalance_doctor.analyze(events=pq.read_table(tmp_path / "events.parquet"))
    assert len(from_file.rebalances) == 10
    with pytest.raises(api.AnalysisError, match="lacks the column"):
        rebalance_doctor.analyze(events=from_logs.events.drop(["ts"]))
    with pytest.raises(api.AnalysisError, match="either paths or events"):
        rebalance_doctor.analyze()


def test_analyze_leaves_the_callers_config_as_it_was():
    from rebalance_doctor.rules.config import AnalysisConfig

    config = AnalysisConfig()
    result = rebalance_doctor.analyze(STORM, config=config, groups=["payments"], since="2024-03-05T10:00:00Z")
    assert result.config.groups == ["payments"] and result.config.since is not None
    assert config.groups == [] and config.since is None


def test_analyze_copies_the_callers_thresholds():
    """The analysis's config is its own: changing it afterwards (a notebook tuning a threshold between runs) does
    not reach back into the caller's AnalysisConfig, nor does one analysis's config leak into the next."""
    from rebalance_doctor.rules.config import AnalysisConfig, defaults, merge

    config = AnalysisConfig(thresholds=merge(defaults(), {"poll-timeout": {"critical_count": 9}}, "test"))
    before = copy.deepcopy(config)
    first = rebalance_doctor.analyze(STORM, config=config, groups=["payments"])
    assert first.config.thresholds == config.thresholds and first.config.thresholds is not config.thresholds
    first.config.thresholds["poll-timeout"]["critical_count"] = 1
    first.config.sources.append("edited")
    assert config == before
    second = rebalance_doctor.analyze(STORM, config=config)
    assert second.config.thresholds["poll-timeout"]["critical_count"] == 9 and second.config.sources == []


def _imported(path: Path) -> set[str]:
    """The package-relative modules a file of rebalance_doctor imports (``api``, ``report.json``, ...)."""
    import ast

    package = path.parent.relative_to(Path(rebalance_doctor.__file__).parent).parts
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[:len(package) - node.level + 1])
            elif (node.module or "").startswith("rebalance_doctor"):
                base, node.module = [], node.module.removeprefix("rebalance_doctor").lstrip(".") or None
            else:
                continue
            module = base + (node.module.split(".") if node.module else [])
            out.add(".".join(module))
            out |= {".".join(module + [a.name]) for a in node.names}
    return out


def test_the_result_types_sit_below_api_and_report():
    """report/ renders a result.Analysis and never imports api or the diagnosis (api imports report/ to render);
    result/ imports neither: one direction."""
    from rebalance_doctor import result

    root = Path(rebalance_doctor.__file__).parent
    for path in sorted((root / "report").glob("*.py")) + sorted((root / "result").glob("*.py")):
        above = {m for m in _imported(path) if m.split(".")[0] in ("api", "diagnosis", "cli")
                 or (path.parent.name == "result" and m.startswith("report"))}
        assert not above, (path.name, above)
    assert issubclass(rebalance_doctor.Analysis, result.Analysis)
