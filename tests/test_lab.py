"""The Kafka lab's own contract: its scenarios are valid data, its truth comes from what it did, bad input
gets one line and the documented exit code. (Recording against real Kafka: tests/test_lab_live.py.)"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from rebalance_doctor.lab import scenario as scenarios
from rebalance_doctor.lab.errors import ENVIRONMENT, USAGE
from rebalance_doctor.lab.releases import catalog, logging_stack
from rebalance_doctor.lab.truth import Action, truth_of
from rebalance_doctor.rules import RULE_IDS

REPO = Path(__file__).resolve().parents[1]


def lab(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rebalance_doctor.lab", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, env={**os.environ, **(env or {})})


@pytest.mark.parametrize("name", scenarios.names())
def test_every_scenario_is_valid(name):
    s = scenarios.load(name)
    assert s.summary and s.duration > 0 and s.apps
    faults = [f for f in s.findings if f.severity != "info"]
    assert s.healthy == (not faults), "a scenario is healthy exactly when it expects no fault"
    for expect in s.findings:
        assert expect.rule in RULE_IDS
    assert set(s.releases) <= set(catalog()["corpus"]) | {"4.2.0", "4.3.1"}, "releases the corpus records"
    last = max([st.at for st in s.steps] or [0])
    assert last < s.duration, "every step happens before the logs are collected"


def test_truth_names_the_process_the_fault_was_driven_at():
    s = scenarios.load("poll-timeout")
    truth = truth_of(s, "4.4.0", [Action(25.0, 0.0, "stall", "app-2")])
    (finding,) = truth.findings
    assert (finding.rule, finding.group, finding.first, finding.culprit) == ("poll-timeout", "orders", True,
                                                                              {"host": "app-2"})
    assert "poll-timeout" not in truth.must_not_fire and "eager-assignor" in truth.may_fire
    assert not truth.rebalances, "which generation a removal lands in is Kafka's decision: no per-rebalance claim"


def test_truth_claims_nothing_the_run_did_not_do():
    s = scenarios.load("poll-timeout")
    truth = truth_of(s, "4.4.0", [])          # the stall never happened (the run stopped before it)
    assert truth.findings == []


def test_a_healthy_scenario_expects_the_healthy_note():
    truth = truth_of(scenarios.load("healthy-scale-out"), "3.9.2", [Action(30.0, 0.0, "start", "app-3")])
    assert [(f.rule, f.severity, f.first) for f in truth.findings] == [("healthy-operation", "info", True)]
    assert tomllib.loads(truth.to_toml())["healthy"] is True


def test_a_scenario_of_several_clusters_keys_its_truth_by_the_cluster_ids_the_lab_formatted():
    """Two clusters whose groups share the group.id orders: the truth names each by the id the lab formatted its
    cluster's storage with (the analysis keys them so when no --cluster names them)."""
    s = scenarios.load("mm2-target-consumer-killed")
    ids = {"A": "CWZqNaLbQyaqXp21KeydRw", "B": "QqzpioaMR8m0aavalygX9w"}
    truth = truth_of(s, "4.4.0", [Action(50.0, 0.0, "kill", "app-b2")], ids)
    assert [(f.rule, f.group, (f.culprit or {}).get("host")) for f in truth.findings] == [
        ("heartbeat-expiration", f"{ids['B']}/orders", "app-b2"), ("healthy-operation", f"{ids['A']}/orders", None),
        ("healthy-operation", f"{ids['B']}/A-mm2", None), ("healthy-operation", f"{ids['A']}/B-mm2", None)]
    assert {a.cluster for a in s.apps if a.kind != "mirror-maker"} == {"A", "B"}
    assert next(a for a in s.apps if a.kind == "mirror-maker").config["A->B.enabled"] == "true"


def test_a_process_of_no_cluster_of_its_scenario_is_a_usage_error(monkeypatch):
    from rebalance_doctor.lab.errors import LabError
    raw = {**scenarios.catalog()}
    bad = dict(raw["scenario"]["mm2-target-consumer-killed"])
    bad["apps"] = [{"host": "app-c1", "kind": "java-consumer", "cluster": "C"}]
    monkeypatch.setattr(scenarios, "catalog", lambda: {**raw, "scenario": {**raw["scenario"], "bad": bad}})
    with pytest.raises(LabError) as raised:
        scenarios.load("bad")
    assert raised.value.code == USAGE and "app-c1 runs against no cluster" in str(raised.value)


def test_mirror_maker_runs_the_connect_mirror_maven_central_has():
    """connect-mirror is not on Maven Central for 4.4.0: MM2 runs 4.3.1 beside 4.4.0's brokers; 3.9.2 its own."""
    from rebalance_doctor.lab.releases import Release
    assert Release("4.4.0", Path("/nowhere"), "log4j2").mirror_version == "4.3.1"
    assert Release("3.9.2", Path("/nowhere"), "reload4j").mirror_version == "3.9.2"


@pytest.mark.parametrize("version,stack", [("2.8.2", "reload4j"), ("3.9.2", "reload4j"), ("4.0.0", "log4j2"),
                                           ("4.4.0", "log4j2")])
def test_each_release_logs_with_the_stack_its_distribution_ships(version, stack):
    assert logging_stack(version) == stack


def test_unknown_scenario_is_a_usage_error():
    run = lab("record", "no-such-scenario", "--kafka", "4.4.0", "--out", "/tmp/rd-lab-none")
    assert run.returncode == USAGE
    assert run.stderr.strip().splitlines() == ["error: unknown scenario 'no-such-scenario'; "
                                               "`python -m rebalance_doctor.lab list` lists them"]


def test_a_release_that_is_not_a_version_is_a_usage_error():
    run = lab("record", "poll-timeout", "--kafka", "latest", "--out", "/tmp/rd-lab-none")
    assert run.returncode == USAGE and "MAJOR.MINOR.PATCH" in run.stderr


@pytest.mark.lab
def test_a_release_not_on_maven_central_is_a_usage_error(tmp_path):
    if shutil.which("mvn") is None or shutil.which("java") is None:
        pytest.skip("needs mvn and java")
    cache = tmp_path / "cache"
    run = lab("record", "poll-timeout", "--kafka", "4.4.99", "--out", str(tmp_path / "out"),
              env={"REBALANCE_DOCTOR_LAB_CACHE": str(cache)})
    assert run.returncode == USAGE
    assert run.stderr.strip().splitlines() == ["error: Kafka 4.4.99: org.apache.kafka:kafka_2.13:4.4.99 is not on Maven Central"]
    assert not (tmp_path / "out").exists()
    assert not (cache / "kafka-4.4.99" / "resolved").exists() and not (cache / "kafka-4.4.99" / "lib.partial").exists()


def test_no_java_is_an_environment_error(tmp_path):
    bare = tmp_path / "bin"
    bare.mkdir()
    os.symlink(sys.executable, bare / "python3")
    run = lab("record", "poll-timeout", "--kafka", "4.4.0", "--out", str(tmp_path / "out"),
              env={"PATH": str(bare), "REBALANCE_DOCTOR_LAB_CACHE": str(tmp_path / "cache")})
    assert run.returncode == ENVIRONMENT
    assert len(run.stderr.strip().splitlines()) == 1 and "needs java" in run.stderr
    assert not (tmp_path / "out").exists()


def test_a_port_in_use_is_a_usage_error(tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        run = lab("record", "healthy-scale-out", "--kafka", "4.4.0", "--out", str(tmp_path / "out"),
                  "--port", str(port), env={**_cached_or_skip("4.4.0"), "TMPDIR": str(scratch)})
    assert run.returncode == USAGE and f"port {port} on 127.0.0.1 is in use" in run.stderr
    assert list(scratch.iterdir()) == [], "the run's work directory is removed"
    assert _processes_under(scratch) == [], "nothing it started is left running"


def _cached_or_skip(version: str) -> dict:
    from rebalance_doctor.lab.releases import cache_root
    if not (cache_root() / f"kafka-{version}" / "resolved").exists() and not os.environ.get("RD_LAB"):
        pytest.skip(f"Kafka {version} is not in the lab cache (RD_LAB=1 resolves it)")
    return {}


def _processes_under(path: Path) -> list[str]:
    run = subprocess.run(["pgrep", "-f", str(path)], capture_output=True, text=True)
    return run.stdout.split()


def _go_home(cache: Path) -> Path:
    return cache / "go" / f"franz-go-{catalog()['go']['franz-go']}"


def test_no_go_is_an_environment_error(tmp_path, monkeypatch):
    from rebalance_doctor.lab.errors import LabError
    from rebalance_doctor.lab.go_client import program
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("REBALANCE_DOCTOR_LAB_CACHE", str(tmp_path / "cache"))
    with pytest.raises(LabError) as raised:
        program()
    assert raised.value.code == ENVIRONMENT and "needs go" in str(raised.value)
    assert "\n" not in str(raised.value)


def test_no_module_proxy_is_an_environment_error(tmp_path, monkeypatch):
    import shutil

    from rebalance_doctor.lab.errors import LabError
    from rebalance_doctor.lab.go_client import program
    if shutil.which("go") is None:
        pytest.skip("go is not installed")
    # an empty module cache and no proxy: what a machine without the Go module proxy gets (no network used)
    monkeypatch.setenv("GOPROXY", "off")
    monkeypatch.setenv("GOMODCACHE", str(tmp_path / "mod"))
    monkeypatch.setenv("GOFLAGS", "-modcacherw")
    monkeypatch.setenv("REBALANCE_DOCTOR_LAB_CACHE", str(tmp_path / "cache"))
    with pytest.raises(LabError) as raised:
        program()
    message = str(raised.value)
    assert raised.value.code == ENVIRONMENT and "go get github.com/twmb/franz-go" in message and "\n" not in message
    assert not (_go_home(tmp_path / "cache") / "labclient").exists()


def test_the_go_client_is_built_once(tmp_path, monkeypatch):
    from rebalance_doctor.lab.go_client import SOURCE, program
    home = _go_home(tmp_path / "cache")
    home.mkdir(parents=True)
    (home / "labclient").write_bytes(b"built")
    (home / "built").write_text(SOURCE.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setenv("PATH", str(tmp_path))      # no go: the cached build is all it needs
    monkeypatch.setenv("REBALANCE_DOCTOR_LAB_CACHE", str(tmp_path / "cache"))
    assert program() == home / "labclient"


@pytest.mark.parametrize("library", ["sarama", "kafka-go"])
def test_each_go_library_has_its_own_build(tmp_path, monkeypatch, library):
    # sarama's and kafka-go's programs are built like franz-go's, each against the version releases.toml pins, into
    # a directory of its own; a cached build of the same source needs no go.
    from rebalance_doctor.lab.apps import App
    from rebalance_doctor.lab.go_client import program, stamp
    version = catalog()["go"][library]
    home = tmp_path / "cache" / "go" / f"{library}-{version}"
    home.mkdir(parents=True)
    (home / "labclient").write_bytes(b"built")
    (home / "built").write_text(stamp(library), encoding="utf-8")     # its source and the shared package's
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("REBALANCE_DOCTOR_LAB_CACHE", str(tmp_path / "cache"))
    assert program(library) == home / "labclient"
    argv = App("app-1", library, {"group.id": "orders"}).argv(None, tmp_path / "work", "127.0.0.1:9092")
    assert argv[0] == str(home / "labclient") and argv[-1] == "default"


def test_what_an_operator_would_not_have_runs_but_is_not_collected():
    """A batch job run with the service's group.id and the brokers run; their logs are not among the recorded files,
    and lab.toml says so (the truth is still what the lab did to them)."""
    from rebalance_doctor.lab.truth import lab_toml

    s = scenarios.load("unlogged-job-churn")
    assert not s.brokers_collected
    assert [a.host for a in s.apps if not a.collected] == ["batch-1"]
    text = lab_toml(s, "4.4.0", [Action(20.0, 0.0, "start", "batch-1")], 0.0, 110.0,
                    {"app-1": "app-1.log", "app-2": "app-2.log", "app-3": "app-3.log", "producer-1": "producer-1.log"})
    recorded = tomllib.loads(text)
    assert recorded["brokers_collected"] is False
    batch = next(p for p in recorded["process"] if p["host"] == "batch-1")
    assert batch["collected"] is False and batch["log"] == ""
    assert all("collected" not in p for p in recorded["process"] if p["host"] != "batch-1")


def test_a_culprit_may_be_a_process_whose_own_configuration_is_the_fault():
    s = scenarios.load("heartbeat-past-rebalance-timeout")
    truth = truth_of(s, "3.9.2", [Action(0.0, 0.0, "start", host) for host in ("app-1", "app-2", "app-3")])
    (finding,) = truth.findings
    assert (finding.rule, finding.culprit) == ("missed-rebalance", {"host": "app-2"})
    assert s.app("app-2").config["heartbeat.interval.ms"] == 15000
