"""Event names come from one registry built from the packs (core/eventnames.py), and operation
names from operations.toml: a name that nothing emits or defines cannot be written in the analysis,
where it would silently match nothing (an event) or get the verdict "unknown" (an operation)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from rebalance_doctor.core import eventnames
from rebalance_doctor.core.toml import load_toml
from rebalance_doctor.packgen import eventnames as generator

PACKAGE = Path(eventnames.__file__).resolve().parents[1]
# Beside the analysis: the simulator and the lab say Kafka's templates by their own ids
# (sim "streams.thread_state"), and packgen handles event names as the data it writes.
BESIDE = ("sim", "lab", "packgen")
DOTTED = r"^[a-z0-9_]+(?:\.[a-z0-9_]+)+$"
# Dotted words of the analysis that name no event: Kafka configuration keys and group types.
NOT_EVENTS = frozenset({"client.id", "group.id", "group.instance.id", "group.protocol",
                        "group.consumer", "group.share", "group.streams"})
CONFIG_SUFFIXES = (".ms", ".records", ".bytes", ".strategy", ".servers", ".id")


def _analysis_modules() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py"))
            if p.relative_to(PACKAGE).parts[0] not in BESIDE and p.name != "eventnames.py"]


@pytest.fixture(scope="module")
def pattern_ids() -> frozenset[str]:
    return frozenset(pattern_id for file in (PACKAGE.parent / "patterns" / "packs").glob("*.toml")
                     for pattern_id in load_toml(file).get("patterns") or {})


def _event_like(value: str, pattern_ids: frozenset[str]) -> bool:
    """A dotted word of an event family (member., join., streams., ...) that is no pattern id,
    configuration key or group type: the analysis would read it as an event name."""
    import regex

    families = {name.split(".", 1)[0] for name in eventnames.ALL}
    return (bool(regex.match(DOTTED, value)) and value.split(".", 1)[0] in families
            and value not in pattern_ids and value not in NOT_EVENTS and not value.endswith(CONFIG_SUFFIXES))


def test_the_registry_is_current_with_the_packs():
    assert not generator.write(check_only=True), "run python -m rebalance_doctor.packgen.eventnames"
    assert eventnames.ALL == frozenset(generator.pack_events())
    assert eventnames.MEMBER_EXPIRED == "member.expired" and "member.expired" in eventnames.ALL


def test_no_analysis_module_spells_an_event_name_as_a_bare_string(pattern_ids):
    bare = []
    for path in _analysis_modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _event_like(node.value, pattern_ids):
                unknown = "" if node.value in eventnames.ALL else " (no pack emits it)"
                bare.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {node.value!r}{unknown}")
    assert not bare, "name events through core/eventnames.py (EV.NAME):\n" + "\n".join(bare)


def test_every_registry_constant_an_analysis_module_uses_exists():
    unknown = []
    for path in _analysis_modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                   for a in node.names if a.name == "eventnames"}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases \
                    and not hasattr(eventnames, node.attr):
                unknown.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {node.value.id}.{node.attr}")
    assert not unknown, "no pack emits these events:\n" + "\n".join(unknown)


def _strings(data) -> list[str]:
    if isinstance(data, dict):
        return [s for value in data.values() for s in _strings(value)]
    if isinstance(data, list):
        return [s for value in data for s in _strings(value)]
    return [data] if isinstance(data, str) else []


def test_the_analysis_data_files_name_only_events_the_packs_emit(pattern_ids):
    unknown = []
    for path in sorted(PACKAGE.rglob("*.toml")):
        if path.relative_to(PACKAGE).parts[0] in BESIDE:
            continue
        unknown += [f"{path.relative_to(PACKAGE)}: {value!r}" for value in _strings(load_toml(path))
                    if _event_like(value, pattern_ids) and value not in eventnames.ALL]
    assert not unknown, "no pack emits these events:\n" + "\n".join(unknown)


def _operation_literals(tree: ast.AST) -> list[tuple[int, str]]:
    """The string literals a module compares with, or assigns to, an operation."""
    def named_operation(node) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "operation") or \
            (isinstance(node, ast.Name) and node.id == "operation")

    def strings(node) -> list[tuple[int, str]]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [(node.lineno, node.value)]
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return [s for element in node.elts for s in strings(element)]
        if isinstance(node, ast.BoolOp):  # previous.operation or "unknown"
            return [s for value in node.values for s in strings(value)]
        return []

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(named_operation(n) for n in [node.left, *node.comparators]):
            found += [s for n in [node.left, *node.comparators] for s in strings(n)]
        elif isinstance(node, ast.Assign) and any(named_operation(t) for t in node.targets):
            found += strings(node.value)
        elif isinstance(node, ast.Call):
            found += [s for k in node.keywords if k.arg == "operation" for s in strings(k.value)]
            if isinstance(node.func, ast.Name) and node.func.id == "_set" and len(node.args) > 1:
                found += strings(node.args[1])  # classify/operations.py: _set(r, operation, ...)
    return found


def test_every_operation_a_classifier_or_rule_names_is_in_operations_toml():
    vocabulary = set(load_toml(PACKAGE / "classify" / "operations.toml")["operation"])
    seen, unknown = 0, []
    for path in sorted((PACKAGE / "classify").glob("*.py")) + sorted((PACKAGE / "rules").glob("*.py")):
        for line, value in _operation_literals(ast.parse(path.read_text(encoding="utf-8"))):
            seen += 1
            if value and value not in vocabulary:
                unknown.append(f"{path.relative_to(PACKAGE)}:{line}: {value!r}")
    assert seen > 20, "the operation literals are no longer found where the test looks"
    assert not unknown, "operations.toml defines no such operation (its verdict would be 'unknown'):\n" + \
        "\n".join(unknown)


def test_a_misspelt_event_or_operation_is_caught():
    misspelt = ast.parse('x = [e for e in events if e["event"] == "member.expird"]\n'
                         'r.operation = "rolling-restrat"\n')
    assert _event_like("member.expird", frozenset()) and "member.expird" not in eventnames.ALL
    assert (2, "rolling-restrat") in _operation_literals(misspelt)
