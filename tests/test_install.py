"""Every install path works: the built wheel in a fresh venv, without the source tree, run the way
pipx, cron and CI run tools (the console script by its path, the venv not activated), and
`pip install .` from a source tree. `batch` runs from the wheel too (the Spark engine starts its
workers with the running interpreter).

The wheel and every dependency are built once into a wheelhouse (pip's cache keeps the downloads),
and each fresh venv installs from it with --no-index. The `spark` and `query` extras are installed
too, so `batch` (when Java is present) and `query` run from the wheel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Minutes of building and installing: CI runs them (.ci/run sets RD_INSTALL_TESTS=1); a local
# `pytest -q` skips them unless asked.
pytestmark = [pytest.mark.install,
              pytest.mark.skipif(os.environ.get("RD_INSTALL_TESTS") != "1",
                                 reason="install tests build wheels and venvs: set RD_INSTALL_TESTS=1 (CI does)")]
STORM = REPO / "fixtures" / "incidents" / "poll-timeout-storm"
HOUR = 3600


def _run(args: list, cwd: Path, env: dict | None = None, timeout: int = 1200) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    return done


def _clean_env(home: Path) -> dict:
    """An environment like a cron job's: no venv on PATH, no PYTHONPATH, no PYSPARK_PYTHON (the Spark
    engine must pick the running interpreter for its workers), no source tree around."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYSPARK_PYTHON")}
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    if os.environ.get("JAVA_HOME"):
        env["PATH"] = f"{os.environ['JAVA_HOME']}/bin:" + env["PATH"]
    env["HOME"] = str(home)
    env["REBALANCE_DOCTOR_CACHE"] = "off"
    return env


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory) -> Path:
    """The project's wheel (built from a copy of the tree, so no build output lands in the
    repository) and the wheels of all its dependencies, extras included. When CI built one
    wheelhouse for every test venv (RD_WHEELHOUSE), it is used and only what it lacks is added."""
    root = tmp_path_factory.mktemp("wheelhouse")
    shared = os.environ.get("RD_WHEELHOUSE")
    house = Path(shared) if shared else root / "wheels"
    house.mkdir(parents=True, exist_ok=True)
    if not list(house.glob("rebalance_doctor-*.whl")):
        source = root / "source"
        shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
            ".git", "__pycache__", "*.egg-info", "build", "dist", ".venv", ".pytest_cache", ".ci-wheelhouse"))
        done = _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", house, source],
                    cwd=root, timeout=HOUR)
        assert done.returncode == 0, done.stderr[-3000:]
    # Every dependency, extras included, and setuptools (`pip install .` builds in an isolated
    # environment that needs it); wheels already in the house are not fetched again.
    project = max(house.glob("rebalance_doctor-*.whl"), key=lambda p: p.stat().st_mtime)
    done = _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir", house, "--find-links", house,
                 f"{project}[spark,query]", "setuptools>=68", "wheel"], cwd=root, timeout=HOUR)
    assert done.returncode == 0, done.stderr[-3000:]
    return house


def _venv(where: Path, house: Path, requirement: str, cwd: Path) -> Path:
    done = _run([sys.executable, "-m", "venv", where], cwd=cwd)
    assert done.returncode == 0, done.stderr
    done = _run([where / "bin" / "python", "-m", "pip", "install", "--quiet", "--no-index", "--find-links", house,
                 requirement], cwd=cwd, timeout=HOUR)
    assert done.returncode == 0, done.stderr[-3000:]
    return where


@pytest.fixture(scope="session")
def installed(wheelhouse, tmp_path_factory) -> tuple[Path, Path]:
    """(a fresh venv with the wheel and its extras, a working directory far from the source tree)."""
    work = tmp_path_factory.mktemp("elsewhere")
    venv = _venv(work / "venv", wheelhouse, "rebalance-doctor[spark,query]", work)
    shutil.copytree(STORM, work / "incident")
    return venv, work


def test_the_wheel_carries_the_packs_and_the_report_assets(wheelhouse):
    import zipfile

    [wheel] = wheelhouse.glob("rebalance_doctor-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("rebalance_doctor/patterns/layouts.toml", "rebalance_doctor/patterns/packs/broker.toml",
                 "rebalance_doctor/rules/thresholds.toml", "rebalance_doctor/report/assets/report.js",
                 "rebalance_doctor/report/assets/report.css", "rebalance_doctor/report/assets/report.html",
                 "rebalance_doctor/report/assets/marks.toml", "rebalance_doctor/report/assets/redact.toml",
                 "rebalance_doctor/timeline/triggers.toml", "rebalance_doctor/patterns/packs/application.toml",
                 "rebalance_doctor/rules/libraries.toml"):
        assert name in names, name
    # The lab records from an installed package too: its programs and the brokers' logging configurations.
    lab = Path(__file__).resolve().parent.parent / "rebalance_doctor" / "lab"
    for source in [*lab.glob("java/*.java"), *lab.glob("js/*.js"), *lab.glob("logging/*"), *lab.glob("go/**/*.go")]:
        assert f"rebalance_doctor/lab/{source.relative_to(lab).as_posix()}" in names, source
    assert "rebalance_doctor/lab/go/sarama/labclient.go" in names and "rebalance_doctor/lab/go/kafkago/labclient.go" in names


def test_console_script_runs_without_activation_or_source_tree(installed):
    venv, work = installed
    env = _clean_env(work)
    script = venv / "bin" / "rebalance-doctor"
    where = _run([venv / "bin" / "python", "-c", "import rebalance_doctor, sys; print(rebalance_doctor.__file__)"],
                 cwd=work, env=env)
    assert where.stdout.startswith(str(venv)), "the wheel's package, not the source tree's"

    analyze = _run([script, "analyze", "incident", "-q", "--html", "incident.html"], cwd=work, env=env)
    assert analyze.returncode == 1, analyze.stderr
    assert "CRITICAL poll-timeout in group payments" in analyze.stdout
    assert "Traceback" not in analyze.stderr and (work / "incident.html").stat().st_size > 10_000

    events = _run([script, "events", "incident", "-q", "-o", "events.parquet"], cwd=work, env=env)
    assert events.returncode == 0, events.stderr

    query = _run([script, "query", "select count(*) as n from events", "incident", "-q", "-f", "json"], cwd=work, env=env)
    assert query.returncode == 0, query.stderr
    again = _run([script, "query", "select count(*) as n from events", "events.parquet", "-q", "-f", "json"],
                 cwd=work, env=env)
    assert json.loads(query.stdout) == json.loads(again.stdout) == [{"n": 330}]

    rules = _run([script, "rules", "explain", "poll-timeout"], cwd=work, env=env)
    assert rules.returncode == 0 and "max.poll.interval.ms" in rules.stdout
    check = _run([script, "patterns", "list"], cwd=work, env=env)
    assert check.returncode == 0 and "broker." in check.stdout


def test_batch_runs_from_the_wheel(installed):
    venv, work = installed
    env = _clean_env(work)
    if shutil.which("java", path=env["PATH"]) is None:
        pytest.skip("no Java runtime: batch needs Spark")
    done = _run([venv / "bin" / "rebalance-doctor", "batch", "incident", "--out", "archive", "-q", "-f", "json"],
                cwd=work, env=env, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    assert summary["table"]["events"] == 330 and summary["table"]["rebalances"] == 10
    query = _run([venv / "bin" / "rebalance-doctor", "query", "select count(*) as n from rebalances", "archive",
                  "-q", "-f", "json"], cwd=work, env=env)
    assert json.loads(query.stdout) == [{"n": 10}], query.stderr


def test_pip_install_dot_from_a_source_tree(wheelhouse, tmp_path):
    source = tmp_path / "source"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".git", "__pycache__", "*.egg-info", "build", "dist", ".venv", ".pytest_cache"))
    venv = _venv(tmp_path / "venv", wheelhouse, str(source), tmp_path)
    elsewhere = tmp_path / "run"
    elsewhere.mkdir()
    env = _clean_env(elsewhere)
    done = _run([venv / "bin" / "rebalance-doctor", "analyze", STORM, "-q", "--brief"], cwd=elsewhere, env=env)
    assert done.returncode == 1 and "poll-timeout" in done.stdout, done.stderr
    assert not (source / "rebalance_doctor" / "patterns").exists(), "building must not copy into the source tree"


def _readme_commands() -> list[str]:
    """The two set-up commands of README's first screen (the indented lines before `## `)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    first_screen = text[:text.index("\n## ")]
    return [line.strip() for line in first_screen.splitlines() if line.startswith("    ")]


def test_readme_shows_exactly_two_setup_commands_and_ci_runs_the_second():
    install_and_analyze, install_and_test = _readme_commands()
    assert "pip install ." in install_and_analyze and "rebalance-doctor analyze fixtures/incidents/" in install_and_analyze
    assert 'pip install -e ".[test]"' in install_and_test and "pytest" in install_and_test
    assert install_and_test in (REPO / ".ci" / "run").read_text(encoding="utf-8")
    screenshot = REPO / "docs" / "img" / "report-poll-timeout-storm.png"
    assert "](docs/img/report-poll-timeout-storm.png)" in (REPO / "README.md").read_text(encoding="utf-8")
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_readme_first_command_on_a_fresh_copy(wheelhouse, tmp_path):
    """The README's first line, as written, in a copy of the tree (pip reads the wheelhouse
    through its environment variables: no network needed)."""
    install_and_analyze, _ = _readme_commands()
    source = tmp_path / "rebalance-doctor"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".git", "__pycache__", "*.egg-info", "build", "dist", ".venv", ".pytest_cache"))
    env = {**_clean_env(tmp_path), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheelhouse),
           "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    done = _run(["bash", "-c", install_and_analyze], cwd=source, env=env, timeout=HOUR)
    assert done.returncode == 1, done.stderr[-3000:]  # 1: it found what the incident holds
    assert "CRITICAL poll-timeout in group payments" in done.stdout
    assert (source / "incident.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
