"""`rebalance-doctor query`: SQL over events, rebalances, findings and files (DuckDB, the query extra).

docs/query.md's answers are run here and must print what the page shows; `PYTHONPATH=.
python tests/test_query.py` rewrites the page's outputs after a deliberate change.
"""

from __future__ import annotations

import gc
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rebalance_doctor.cli.app import app

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "query.md"
STORM = str(REPO / "fixtures" / "incidents" / "poll-timeout-storm")
INCIDENTS = str(REPO / "fixtures" / "incidents")
runner = CliRunner()

duckdb = pytest.importorskip("duckdb", reason="the query extra (DuckDB) is not installed")


@pytest.fixture(autouse=True, scope="module")
def _no_duckdb_left_running():
    """The DuckDB connections these in-process runs leave to the garbage collector (a failed query's,
    in its traceback's reference cycle: the command closes its connection only when the query
    succeeds) keep DuckDB's threads running in the test process; a later test in the same process
    that forks --jobs workers then had a worker die of SIGSEGV (test_range_accounting's huge line
    with jobs=2, after this file's fast tier). Collected when the file is done."""
    yield
    gc.collect()


def invoke(*args, columns: int = 100):
    return runner.invoke(app, list(args), env={"COLUMNS": str(columns)})


def query_json(sql: str, *paths: str) -> list[dict]:
    result = invoke("query", sql, *paths, "-q", "-f", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.slow
def test_count_of_events_equals_the_events_command_rows():
    [row] = query_json("select count(*) as n from events", INCIDENTS)
    exported = invoke("events", INCIDENTS, "-q")
    assert exported.exit_code == 0
    assert row["n"] == len(exported.stdout.splitlines()) > 1000


def test_the_four_tables_hold_what_analyze_found():
    analysis = json.loads(invoke("analyze", STORM, "-q", "-f", "json").stdout)
    rebalances = query_json('select "group", index, generation, trigger_kind from rebalances order by index', STORM)
    assert [(r["index"], r["generation"], r["trigger_kind"]) for r in rebalances] == \
        [(r["index"], r["generation"], r["trigger_kind"]) for r in analysis["groups"][0]["rebalances"]]
    findings = query_json("select rule, severity, evidence from findings", STORM)
    assert {f["rule"] for f in findings} == {f["rule"] for f in analysis["findings"]}
    assert all(line.split(": ", 1)[0].count(":") == 1 for f in findings for line in f["evidence"])
    files = query_json("select source, status, reason, events from files order by source", STORM)
    assert {f["source"]: f["status"] for f in files} == {
        "broker-1/server.log": "read", "node1.log": "read", "node2.log": "read", "node3.log": "read",
        "expected.toml": "skipped"}
    assert sum(f["events"] or 0 for f in files) == analysis["accounting"]["events"]


def test_output_formats_csv_and_table():
    csv_out = invoke("query", "select index, trigger_kind from rebalances order by index limit 2", STORM, "-q", "-f", "csv")
    assert csv_out.exit_code == 0
    assert csv_out.stdout.splitlines() == ["index,trigger_kind", "1,poll-timeout", "2,new-member"]
    table = invoke("query", "select index, trigger_kind from rebalances order by index limit 2", STORM, "-q")
    assert table.stdout.splitlines()[0].split() == ["index", "trigger_kind"] and "2 row(s)" in table.stdout


def test_o_names_an_output_file_and_the_old_format_spelling_still_works(tmp_path: Path):
    sql = "select index, trigger_kind from rebalances order by index limit 2"
    target = tmp_path / "rebalances.csv"
    written = invoke("query", sql, STORM, "-q", "-o", str(target))
    assert written.exit_code == 0 and written.stdout == ""
    assert target.read_text().splitlines() == ["index,trigger_kind", "1,poll-timeout", "2,new-member"]
    as_json = tmp_path / "rebalances.json"
    assert invoke("query", sql, STORM, "-q", "-f", "json", "-o", str(as_json)).exit_code == 0
    assert [r["trigger_kind"] for r in json.loads(as_json.read_text())] == ["poll-timeout", "new-member"]
    old = invoke("query", sql, STORM, "-q", "-o", "csv")
    assert old.exit_code == 0 and old.stdout.splitlines()[0] == "index,trigger_kind"
    assert "old spelling of --format csv" in old.stderr
    refused = invoke("query", sql, STORM, "-q", "-o", str(tmp_path))     # a directory is no output file
    assert refused.exit_code == 2 and not list(tmp_path.glob("*.partial*"))


def test_events_parquet_and_a_saved_database(tmp_path: Path):
    parquet = tmp_path / "events.parquet"
    assert invoke("events", STORM, "-q", "-o", str(parquet)).exit_code == 0
    from_logs = query_json("select count(*) n, count(distinct host) hosts from events", STORM)
    from_parquet = query_json("select count(*) n, count(distinct host) hosts from events", str(parquet))
    assert from_logs == from_parquet
    assert query_json("select count(*) n from rebalances", str(parquet)) == [{"n": 10}], \
        "events from Parquet are diagnosed like logs"
    saved = tmp_path / "incident.duckdb"
    result = invoke("query", "select 1", STORM, "-q", "--save", str(saved))
    assert result.exit_code == 0
    connection = duckdb.connect(str(saved), read_only=True)
    try:
        tables = {row[0] for row in connection.execute("select table_name from information_schema.tables").fetchall()}
        assert tables >= {"events", "rebalances", "findings", "files"}
        assert connection.execute("select count(*) from rebalances").fetchone()[0] == 10
    finally:
        connection.close()


def test_batch_output_directory(spark, tmp_path: Path):
    from rebalance_doctor.batch import run_batch

    out = tmp_path / "archive"
    run_batch(spark, [STORM], str(out))
    [events] = query_json("select count(*) n from events", str(out))
    [local] = query_json("select count(*) n from events", STORM)
    assert events == local
    assert query_json("select count(*) n from rebalances", str(out)) == [{"n": 10}]
    files = query_json("select source, status from files", str(out))
    assert len(files) == 4 and {f["status"] for f in files} == {"read"}


def test_bad_sql_is_a_usage_error_with_duckdbs_message():
    result = invoke("query", "select * from nosuchtable", STORM, "-q")
    assert result.exit_code == 2
    assert "nosuchtable" in result.stderr and "Traceback" not in result.stderr


def test_without_duckdb_one_line_says_what_to_install():
    code = ("import sys; sys.modules['duckdb'] = None\n"
            "from rebalance_doctor.cli.app import main; sys.argv = ['rebalance-doctor', 'query', 'select 1', "
            f"{STORM!r}]; main()")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 5
    assert done.stderr.strip().splitlines() == [
        "error: query needs DuckDB, which is not installed: pip install 'rebalance-doctor[query]'"]


# ------------------------------------------------------------------------------ docs/query.md

_BLOCK = re.compile(r"```console\n(.*?)```", re.S)


def _command(block: str) -> tuple[list[str], str]:
    lines = block.split("\n")
    assert lines[0].startswith("$ rebalance-doctor ")
    command = [lines[0][2:]]
    for line in lines[1:]:
        if not line.startswith("    "):
            break
        command.append(line)
    return shlex.split("\n".join(command))[1:], "\n".join(command)


def refresh(text: str) -> str:
    """docs/query.md with every command's output replaced by what the command prints now."""

    def run(match: re.Match) -> str:
        args, command = _command(match.group(1))
        result = invoke(*args)
        assert result.exit_code == 0, f"{command}\n{result.stderr}"
        return f"```console\n$ {command}\n{result.stdout}```"

    return _BLOCK.sub(run, text)


@pytest.mark.slow
def test_docs_query_answers_are_what_the_commands_print(monkeypatch):
    monkeypatch.chdir(REPO)
    text = DOC.read_text(encoding="utf-8")
    assert len(_BLOCK.findall(text)) >= 10
    assert refresh(text) == text, "docs/query.md is out of date: run PYTHONPATH=. python tests/test_query.py"


if __name__ == "__main__":
    import os

    os.chdir(REPO)
    DOC.write_text(refresh(DOC.read_text(encoding="utf-8")), encoding="utf-8")
