"""The incident simulator: the model's invariants, the lint, determinism, the catalogue, the CLI's errors."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rebalance_doctor.packgen.inventory import default_path
from rebalance_doctor.sim.catalog import VERSIONS   # the releases the simulator renders
from rebalance_doctor.sim import catalog, scenarios
from rebalance_doctor.sim.clock import Environment, Interrupt
from rebalance_doctor.sim.lint import Inventory, lint, load_rows
from rebalance_doctor.sim.logs import Record
from rebalance_doctor.sim.scenarios import ScenarioError

REPO = Path(__file__).resolve().parents[1]


# -- the clock -----------------------------------------------------------------------------------------
def test_clock_runs_processes_in_time_order_and_interrupts_them():
    env = Environment()
    seen = []

    def worker(name, delays):
        try:
            for d in delays:
                yield env.timeout(d)
                seen.append((env.now, name))
        except Interrupt as stop:
            seen.append((env.now, f"{name} stopped: {stop.cause}"))

    a = env.process(worker("a", [10, 10, 10]))
    env.process(worker("b", [15, 15]))
    env.call_at(25, lambda: a.interrupt("crash"))
    env.run()
    assert seen == [(10, "a"), (15, "b"), (20, "a"), (25, "a stopped: crash"), (30, "b")]


# -- the catalogue ---------------------------------------------------------------------------------------
def test_catalogue_rows_are_kafka_templates():
    """Every candidate of lines.toml names a row of the project's own inventory (patterns/kafka/templates.jsonl,
    extracted from the releases' -sources jars), the file the simulator reads its lines from."""
    assert catalog.inventory_path() == default_path()
    rows = {(r["component"], r["template"]) for r in map(json.loads, default_path().read_text().splitlines())}
    for key, (component, candidates) in catalog.catalog().items():
        for candidate in candidates:
            comps = ("consumer", "connect", "streams") if component == "coordinator" else (component,)
            assert any((c, candidate.template) in rows for c in comps), f"{key}: {candidate.template!r}"


def test_the_simulator_reads_nothing_outside_the_project():
    """The simulator's lines come from the project's inventory: no file of rebalance_doctor/ names ../shared."""
    for path in (REPO / "rebalance_doctor" / "sim").rglob("*"):
        if path.is_file() and path.suffix in (".py", ".toml", ".jsonl"):
            assert "../shared" not in path.read_text(encoding="utf-8"), path


def test_4_4_writes_what_4_4_writes():
    """4.4 moved AppInfoParser into common.utils.internals (the lab's 4.4.0 clients log with that logger)."""
    assert catalog.resolve("consumer.kafka_version", "4.3.1").row.logger == "org.apache.kafka.common.utils.AppInfoParser"
    assert catalog.resolve("consumer.kafka_version", "4.4.0").row.logger == \
        "org.apache.kafka.common.utils.internals.AppInfoParser"


def test_a_line_is_written_only_where_kafka_writes_it():
    # "Successfully synced group" appeared in 2.8; 2.4 has no such line
    assert catalog.resolve("coord.synced", "2.4.0") is None
    assert catalog.resolve("coord.synced", "2.8.0").row.level == "INFO"
    # the Scala coordinator is gone in 4.1: its lines do not resolve there
    assert catalog.resolve("scala.stabilized", "4.1.0") is None
    # the AbstractCoordinator lines carry the ConsumerCoordinator logger from 3.0
    assert catalog.resolve("coord.joining", "2.8.0").row.logger.endswith(".AbstractCoordinator")
    assert catalog.resolve("coord.joining", "3.0.0").row.logger.endswith(".ConsumerCoordinator")
    # a Connect worker writes the same lines with its own logger
    assert catalog.resolve("coord.joining", "3.6.0", "connect").row.logger.endswith(".WorkerCoordinator")


def test_release_of_a_version():
    assert catalog.release("3.7.1") == "3.6.0"
    assert catalog.release("4.2") == "4.2.0"
    assert catalog.release("4.3.3") == "4.3.2"
    assert catalog.release("4.4.0") == "4.4.0"
    for bad in ("2.3.9", "4.5.0", "5"):
        with pytest.raises(ValueError):
            catalog.release(bad)


# -- the model's invariants --------------------------------------------------------------------------------
def _stabilized(incident) -> list[int]:
    gens = []
    for log in incident.world.logs:
        for r in log.records:
            m = re.search(r"Stabilized group \S+ generation (\d+)", r.message)
            if m:
                gens.append((r.t, int(m.group(1))))
    return [g for _, g in sorted(gens)]


@pytest.mark.parametrize("name", ["healthy-rolling-restart", "poll-timeout-storm", "gc-pause-session-timeout"])
def test_generations_increase_by_one_per_completed_join(name):
    incident = scenarios.run(name, 21, "3.6.0")
    gens = _stabilized(incident)
    assert len(gens) >= 3
    assert gens == list(range(gens[0], gens[0] + len(gens)))


def test_static_rejoins_within_the_session_timeout_create_no_generation():
    incident = scenarios.run("healthy-static-restart", 5, "3.6.0")
    text = "\n".join(r.message for log in incident.world.logs for r in log.records)
    restarts = text.count("will not trigger")
    assert restarts >= 1
    assert text.count("Replacing previously mapped member") == restarts
    first_return = min(r.t for log in incident.world.logs for r in log.records
                       if "Replacing previously mapped member" in r.message)
    after = [r for log in incident.world.logs for r in log.records
             if r.t >= first_return and re.search(r"Stabilized group|Preparing to rebalance", r.message)]
    assert after == [], "a static member back within its session timeout starts no rebalance"
    assert "0 of which are static" not in text


def test_members_lines_follow_the_protocol_order():
    """joined N -> synced N -> assignment, for every member, in every release."""
    for version in VERSIONS:
        incident = scenarios.run("healthy-rolling-restart", 8, version)
        for log in incident.world.logs:
            if log.component != "consumer":
                continue
            keys = [r.key for r in sorted(log.records, key=lambda r: (r.t, r.seq)) if r.key]
            for i, key in enumerate(keys):
                if key == "coord.synced":
                    assert "coord.joined" in keys[:i]
                if key == "consumer.added":
                    assert "coord.joined" in keys[:i]


@pytest.mark.parametrize("name", sorted(scenarios.SCENARIOS))
def test_simulation_is_deterministic_per_seed(name):
    first = scenarios.run(name, 99)
    second = scenarios.run(name, 99)
    assert first.render() == second.render()
    assert first.truth.to_toml() == second.truth.to_toml()


# -- the lint ------------------------------------------------------------------------------------------------
def _inventory() -> Inventory:
    return Inventory(load_rows())


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
def test_every_scenario_lints_clean(version):
    inventory = _inventory()
    for name, spec in sorted(scenarios.SCENARIOS.items()):
        if version not in scenarios.versions_of(spec):
            continue
        incident = scenarios.run(name, 3, version)
        assert lint(incident.world, inventory) == [], name


def test_lint_catches_what_kafka_never_writes():
    inventory = _inventory()
    incident = scenarios.run("healthy-deploy", 4, "2.8.0")
    client = next(log for log in incident.world.logs if log.component == "consumer")
    broker = next(log for log in incident.world.logs if log.component == "broker")
    n = len(client.records)
    # a 3.0+ line in a 2.8 process; a DEBUG-only line at INFO; a revocation of a partition never assigned
    client.records.append(Record(1e9, n, "INFO", "org.apache.kafka.clients.consumer.internals.ConsumerCoordinator",
                                 client.records[-1].message.split("] ")[0] + "] Request joining group due to: x",
                                 "main", key="coord.request_rejoin"))
    client.records.append(Record(1e9, n + 1, "INFO", "org.apache.kafka.clients.consumer.internals.AbstractCoordinator",
                                 "[Consumer clientId=c, groupId=g] JoinGroup failed due to non-fatal error: "
                                 "MEMBER_ID_REQUIRED Will set the member id as m and then rejoin. Sent generation was  x",
                                 "main", key="coord.member_id_required"))
    client.records.append(Record(1e9, n + 2, "INFO", "org.apache.kafka.clients.consumer.internals.ConsumerCoordinator",
                                 "[Consumer clientId=c, groupId=g] Revoke previously assigned partitions nowhere-7",
                                 "main", key="consumer.revoke"))
    broker.records.append(Record(1e9, len(broker.records), "INFO", "kafka.coordinator.group.GroupCoordinator",
                                 "[GroupCoordinator 1]: Removed 0 expired offsets in 1 milliseconds.", "main"))
    problems = lint(incident.world, inventory)
    assert any("Request joining group due to" in p for p in problems)
    assert any("JoinGroup failed due to non-fatal error" in p for p in problems)
    assert any("never assigned" in p for p in problems)
    assert any("is a Kafka logger" in p for p in problems)



def test_every_fixture_is_the_simulator_output_and_lints_clean(tmp_path):
    """fixtures/incidents/ are simulator runs (incidents.toml): each lints clean against the templates of its
    release (template, level and logger per line; no impossible sequence), and the files on disk are exactly that
    run rendered, so no hand edit slips in a line Kafka does not write."""
    import tomllib

    from rebalance_doctor.sim.fixtures import build

    inventory = _inventory()
    root = REPO / "fixtures" / "incidents"
    specs = tomllib.loads((root / "incidents.toml").read_text(encoding="utf-8"))["incident"]
    shipped = {p.name for p in root.iterdir() if p.is_dir() and (p / "expected.toml").is_file()}
    assert shipped == set(specs), "every fixture directory comes from incidents.toml"
    for name, spec in specs.items():
        incident = build(name, spec)
        assert lint(incident.world, inventory) == [], name
        incident.write(tmp_path / name)
        written = {p.relative_to(tmp_path / name): p.read_bytes() for p in (tmp_path / name).rglob("*") if p.is_file()}
        on_disk = {p.relative_to(root / name): p.read_bytes() for p in (root / name).rglob("*") if p.is_file()}
        assert written.keys() == on_disk.keys(), name
        for path, content in written.items():
            assert content == on_disk[path], f"fixtures/incidents/{name}/{path} differs from the simulator's output"


# -- the CLI ---------------------------------------------------------------------------------------------
def _accuracy(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rebalance_doctor.judge.accuracy", *args], capture_output=True,
                          text=True, timeout=300, cwd=REPO)


@pytest.mark.parametrize("args, message", [
    (["--scenario", "no-such-story", "--count", "1"], "unknown scenario"),
    (["--kafka", "2.3.0", "--count", "1"], "outside"),
    (["--kafka", "5.1", "--count", "1"], "outside"),
    (["--count", "0"], "at least 1"),
    (["--per-scenario", "0"], "at least 1"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    run = _accuracy(*args)
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and message in run.stderr and "Traceback" not in run.stderr


def test_unknown_scenario_through_the_api():
    with pytest.raises(ScenarioError, match="unknown scenario"):
        scenarios.run("nope", 1)


def test_the_table_scores_a_small_run():
    run = _accuracy("--count", "3", "--seed", "2", "--scenario", "poll-timeout-storm")
    assert run.returncode == 0, run.stderr
    assert "| `poll-timeout` |" in run.stdout and "untested" in run.stdout
    assert "healthy false-alarm rate" in run.stdout


def test_per_scenario_runs_every_chosen_scenario_that_often():
    run = _accuracy("--per-scenario", "2", "--seed", "2", "--scenario", "poll-timeout-storm",
                    "--scenario", "healthy-static-restart")
    assert run.returncode == 0, run.stderr
    assert "accuracy: 4 incidents" in run.stdout and "- incidents: 4 (2 healthy)" in run.stdout


def test_a_scenario_module_registers_itself_and_a_name_is_unique():
    """One module per area: every module of the package is imported (no list to edit), and a second scenario
    under a name already taken is refused."""
    import pkgutil

    modules = {m.name for m in pkgutil.iter_modules(scenarios.__path__)} - {"base"}
    assert modules <= {spec.func.__module__.rsplit(".", 1)[1] for spec in scenarios.SCENARIOS.values()}
    with pytest.raises(ScenarioError, match="registered twice"):
        scenarios.scenario("healthy-deploy", "classic", healthy=True)(lambda ctx: None)


def test_a_new_scenario_leaves_the_other_scenarios_incidents_alone():
    """The gate and the table stay comparable while scenarios are added: each incident's seed depends on the plan
    seed, its scenario and its rank only."""
    from rebalance_doctor.judge import accuracy

    few = ["crash-loop", "healthy-deploy", "poll-timeout-storm"]
    before = accuracy.plan(3 * len(few), 1616, few)
    after = accuracy.plan(3 * (len(few) + 1), 1616, few + ["healthy-scale-in"])
    assert set(before) == {case for case in after if case[0] in few}
    assert len(set(before)) == len(before)


def test_the_table_marks_the_rules_the_analysed_tree_does_not_have():
    from rebalance_doctor.judge import score

    assert "poll-timeout" in score.rules_of(REPO) and "no-such-rule" not in score.rules_of(REPO)
    scores = score.Scores(analysed_rules={"poll-timeout"})
    scores.rules["poll-timeout"] = score.RuleScore("poll-timeout", tp=1, positives=1)
    scores.rules["mass-expiry"] = score.RuleScore("mass-expiry", fn=1, positives=1)
    rows = {line.split("|")[1].strip(): line for line in score.table(scores).splitlines() if line.startswith("| `")}
    assert "no such rule in the analysed tree yet" in rows["`mass-expiry`"]
    assert "no such rule" not in rows["`poll-timeout`"]
