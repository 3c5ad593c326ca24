"""How close the simulator is to real Kafka: each lab scenario beside its simulator twin.

    python -m rebalance_doctor.judge.twins fixtures/lab                  # the table and every difference
    python -m rebalance_doctor.judge.twins fixtures/lab --out docs/accuracy.md

For every recorded incident whose scenario has a twin (twins.toml), the twin is simulated at the same
release (the newest simulated release at or below it: the simulator renders 2.4 through 4.4), with the lab's hosts, timeouts, assignor and
Kafka's own layouts (lab_pins), and both are read into events. Per process role
(the coordinator, the process the fault was driven at, the other members) the kinds of events each
writes, in the order they first appear, are compared: kinds only real Kafka writes are what the
simulator misses, kinds only the simulator writes are what it invents. Where they differ, the lab is
right and the simulator is what changes (CONVENTIONS.md).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..core.toml import load_toml
from .truth import Truth, from_toml

ROLES = ("coordinator", "culprit", "members")


@lru_cache(maxsize=1)
def catalog() -> dict:
    return load_toml(Path(__file__).resolve().parent / "twins.toml")


def _kept(kind: str) -> bool:
    ignore = catalog()["ignore"]
    return kind not in ignore["kinds"] and not any(kind.endswith(s) for s in ignore["suffixes"])


def culprit_host(truth: Truth) -> str | None:
    for finding in truth.findings:
        if finding.culprit and finding.culprit.get("host"):
            return finding.culprit["host"]
    return None


def kinds_by_role(directory: Path, culprit: str | None) -> dict[str, list[str]]:
    """Event kinds per role, each once, in the order they first appear."""
    from ..engines.local import read_events
    events, _ = read_events([str(directory)])
    events.sort(key=lambda e: (e.get("ts") or 0))
    out: dict[str, list[str]] = {role: [] for role in ROLES}
    for event in events:
        kind = event.get("event")
        if not kind or not _kept(kind) or event.get("component") == "application":
            continue    # the lab application's own lines are the lab's words, not Kafka's: no twin writes them
        role = ("coordinator" if event.get("component") == "broker"
                else "culprit" if culprit and event.get("host") == culprit else "members")
        if kind not in out[role]:
            out[role].append(kind)
    return out


@dataclass
class Twin:
    lab: str                 # the recorded incident's directory name
    sim: str                 # the simulator's scenario
    simulated_at: str
    roles: dict[str, tuple[list[str], list[str], list[str]]] = field(default_factory=dict)  # common, lab, sim

    def agreement(self, role: str) -> float | None:
        common, lab_only, sim_only = self.roles[role]
        total = len(common) + len(lab_only) + len(sim_only)
        return len(common) / total if total else None


def simulated_release(version: str) -> str:
    """The newest simulated release at or below ``version`` (3.9.2 -> 3.9.0, 4.2.1 -> 4.2.0, 4.4.0)."""
    from ..sim.catalog import VERSIONS, version_key
    key = version_key(version)
    return [v for v in VERSIONS if version_key(v) <= key][-1]


# The Java consumer's assignor classes as the simulator names them.
ASSIGNORS = {"RangeAssignor": "range", "RoundRobinAssignor": "roundrobin", "StickyAssignor": "sticky",
             "CooperativeStickyAssignor": "cooperative-sticky"}
NOT_MEMBERS = {"java-producer"}


def lab_pins(directory: Path) -> dict:
    """The simulator's choices fixed to what the lab ran: hosts, sizes, timeouts, assignor, Kafka's own
    layouts, clocks in step. Without them a twin compares a cooperative group with an eager one, or a
    DEBUG-level client with a default one, and the differences say nothing about the simulator."""
    lab_file = directory / "lab.toml"
    if not lab_file.is_file():
        return {}
    lab = tomllib.loads(lab_file.read_text(encoding="utf-8"))
    members = [p for p in lab.get("process", []) if p.get("kind") not in NOT_MEMBERS
               and not str(p.get("kind", "")).startswith("broker")]
    hosts = [p["host"] for p in members]
    pins: dict = {"hosts": hosts, "members": len(hosts), "layouts": {h: "kafka" for h in hosts},
                  "skews": {h: 0 for h in hosts}, "broker_layouts": "kafka", "client_layouts": "kafka",
                  "path_schemes": "flat", "window": "full"}   # the lab records from the start
    culprit = culprit_host(from_toml(tomllib.loads((directory / "expected.toml").read_text(encoding="utf-8"))))
    if culprit in hosts:
        pins["culprit"] = culprit
    if lab.get("brokers"):
        pins["brokers"] = int(lab["brokers"])
    if lab.get("kafka"):
        # the lab's brokers run the clients' release: a later one drawn by the simulator would put 3.9's
        # Scala coordinator's lines in the Java one's words
        pins["broker_version"] = simulated_release(str(lab["kafka"]))
    if lab.get("partitions"):
        pins["partitions"] = int(lab["partitions"])
    config = members[0].get("config", {}) if members else {}
    session = config.get("session.timeout.ms")
    if session:
        pins["session_timeout_ms"] = int(session)
        if config.get("heartbeat.interval.ms"):
            pins["heartbeat_divisor"] = max(1, int(session) // int(config["heartbeat.interval.ms"]))
    if config.get("max.poll.interval.ms"):
        pins["max_poll_interval_ms"] = int(config["max.poll.interval.ms"])
    strategy = str(config.get("partition.assignment.strategy", "")).split(",")[0].strip()
    if strategy or any(p.get("kind") == "java-consumer" for p in members):
        # the Java consumer's default list starts with RangeAssignor: an eager group
        pins["assignors"] = ASSIGNORS.get(strategy.rsplit(".", 1)[-1], "range")
    return pins


def simulate_twin(directory: Path, sim_name: str, seed: int = 1):
    """The twin of a recorded incident, simulated with what the lab ran: (its truth, the incident, its release)."""
    from ..sim.scenarios import run as simulate
    truth = from_toml(tomllib.loads((directory / "expected.toml").read_text(encoding="utf-8")))
    at = simulated_release(truth.kafka)
    pins = lab_pins(directory)
    try:
        incident = simulate(sim_name, seed, at, pins=pins)
    except Exception:   # the twin does not run at that release (its own version range): its default
        incident = simulate(sim_name, seed, pins=pins)
        at = incident.truth.kafka
    return truth, incident, at


def compare(directory: Path, sim_name: str, seed: int = 1) -> Twin:
    truth, incident, at = simulate_twin(directory, sim_name, seed)
    twin = Twin(directory.name, sim_name, at)
    real = kinds_by_role(directory, culprit_host(truth))
    with tempfile.TemporaryDirectory(prefix="rd-twin-") as tmp:
        incident.write(Path(tmp))
        # one culprit for both: a healthy lab operation has none, whatever the twin's truth names
        simulated = kinds_by_role(Path(tmp), culprit_host(truth) and culprit_host(incident.truth))
    for role in ROLES:
        r, s = real[role], simulated[role]
        twin.roles[role] = ([k for k in r if k in s], [k for k in r if k not in s], [k for k in s if k not in r])
    return twin


def compare_corpus(root: Path) -> list[Twin]:
    twins = catalog()["twin"]
    out = []
    for directory in sorted(p.parent for p in root.glob("*/expected.toml")):
        scenario = directory.name.split("@")[0]
        if scenario in twins:
            out.append(compare(directory, twins[scenario]))
    return out


def report(twins: list[Twin]) -> str:
    def pct(value):
        return "-" if value is None else f"{value:.2f}"

    lines = ["| recorded incident | simulator twin (release) | coordinator | culprit | members |",
             "|---|---|---|---|---|"]
    for t in twins:
        lines.append(f"| {t.lab} | {t.sim} ({t.simulated_at}) | "
                     + " | ".join(pct(t.agreement(r)) for r in ROLES) + " |")
    lines += ["", "Each twin is simulated with what the lab ran (hosts, timeouts, assignor, Kafka's own layouts, "
              "the whole run). Agreement: event kinds both write / kinds either writes, per role. Differences "
              "(real = only real Kafka writes it, sim = only the simulator does):", ""]
    for t in twins:
        for role in ROLES:
            _, lab_only, sim_only = t.roles[role]
            if lab_only or sim_only:
                lines.append(f"- {t.lab} / {t.sim}, {role}: real {', '.join(lab_only) or '-'}; "
                             f"sim {', '.join(sim_only) or '-'}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rebalance_doctor.judge.twins",
                                     description="Compare each recorded lab incident with its simulator twin.")
    parser.add_argument("root", type=Path, nargs="?", default=Path("fixtures/lab"))
    parser.add_argument("--out", type=Path, help="write the section into this markdown file (docs/accuracy.md)")
    args = parser.parse_args(argv)
    twins = compare_corpus(args.root)
    if not twins:
        print(f"error: {args.root}: no recorded incident with a simulator twin", file=sys.stderr)
        return 2
    body = report(twins)
    print(body)
    if args.out:
        from .recorded import write_block
        write_block(args.out, body, "twins", "The simulator beside real Kafka: twins")
    return 0


if __name__ == "__main__":
    sys.exit(main())
