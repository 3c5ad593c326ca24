"""The scenario catalogue: healthy operations and faults, each a script over the model.

``SCENARIOS`` maps a name to its ``Scenario`` (the function, the protocol family, whether it is
healthy, the rules it is a positive or a look-alike for); ``run(name, seed, kafka=None)`` returns
the ``Incident``. Bad input (an unknown scenario, a Kafka version outside 2.4-4.4) raises
``ScenarioError`` with a one-line message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ...packgen.inventory import version_key
from ..catalog import VERSIONS
from .base import Ctx, Incident


class ScenarioError(ValueError):
    """Bad input to the simulator (one line, for the CLI)."""


@dataclass(frozen=True)
class Scenario:
    name: str
    func: Callable[[Ctx], Incident]
    protocol: str
    healthy: bool
    rules: tuple[str, ...]          # the rules its truth expects (positives)
    resembles: tuple[str, ...]      # the rules it looks like without being one (healthy look-alikes)
    summary: str
    versions: tuple[str, str] = (VERSIONS[0], VERSIONS[-1])   # the releases the story exists in


SCENARIOS: dict[str, Scenario] = {}


def scenario(name: str, protocol: str, healthy: bool = False, rules: tuple[str, ...] = (),
             resembles: tuple[str, ...] = (), versions: tuple[str, str] = (VERSIONS[0], VERSIONS[-1])):
    def register(func: Callable[[Ctx], Incident]) -> Callable[[Ctx], Incident]:
        if name in SCENARIOS:
            raise ScenarioError(f"scenario {name!r} is registered twice ({SCENARIOS[name].func.__module__} "
                                f"and {func.__module__})")
        summary = (func.__doc__ or "").strip().splitlines()[0]
        SCENARIOS[name] = Scenario(name, func, protocol, healthy, tuple(rules), tuple(resembles), summary, versions)
        return func
    return register


def check_version(kafka: str | None) -> None:
    """A one-line ScenarioError unless ``kafka`` is a release the simulator renders (2.4-4.4)."""
    if kafka is None:
        return
    from ..catalog import RANGE, release
    try:
        release(kafka)
    except ValueError:
        if not all(part.isdigit() for part in kafka.split(".")):
            raise ScenarioError(f"{kafka!r} is not a Kafka version (expected e.g. 3.6.0)") from None
        raise ScenarioError(f"Kafka {kafka} is outside the simulated range {RANGE}") from None


def versions_of(spec: Scenario) -> list[str]:
    low, high = (version_key(v) for v in spec.versions)
    return [v for v in VERSIONS if low <= version_key(v) <= high]


def run(name: str, seed: int, kafka: str | None = None, pins: dict | None = None) -> Incident:
    """Simulate scenario ``name`` with ``seed`` (and, if given, at Kafka release ``kafka``, with some of its
    choices fixed by ``pins``: names, hosts, layouts, timeouts, the culprit... as the shipped fixtures do)."""
    if name not in SCENARIOS:
        raise ScenarioError(f"unknown scenario {name!r} (see `python -m rebalance_doctor.judge.accuracy --list`)")
    check_version(kafka)
    spec = SCENARIOS[name]
    allowed = versions_of(spec)
    if kafka is not None:
        from ..catalog import release
        if release(kafka) not in allowed:
            raise ScenarioError(f"scenario {name} needs Kafka {spec.versions[0]}-{spec.versions[1]}, not {kafka}")
    ctx = Ctx(name, seed, kafka, protocol=spec.protocol, pins=pins)
    if kafka is None:
        ctx.kafka = ctx.rng.choice(allowed)
        ctx.truth.kafka = ctx.kafka
    incident = spec.func(ctx)
    incident.truth.resembles = list(spec.resembles)
    return incident


def _register_all() -> None:
    """Import every module of this package (one per area: classic, streams, connect, kip848, broker, ...):
    each registers its scenarios with ``@scenario``, so a new area is a new file and nothing else."""
    import importlib
    import pkgutil

    for module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        if module != "base":
            importlib.import_module(f"{__name__}.{module}")


_register_all()
