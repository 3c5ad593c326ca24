"""Rule thresholds: the shipped defaults (thresholds.toml) with the user's overrides on top."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from pathlib import Path

from ..core.toml import DataFileError, load_toml

DEFAULTS_FILE = Path(__file__).with_name("thresholds.toml")
SCHEMA_FILE = Path(__file__).with_name("thresholds_schema.toml")
_TYPES = {"int": int, "float": (int, float), "bool": bool}


@lru_cache(maxsize=1)
def schema() -> dict:
    return load_toml(SCHEMA_FILE)


def check(table: str, key: str, value, origin: str) -> None:
    """A threshold of the wrong type or outside its bounds is refused like a bad CLI option: one line naming
    the file, the key and the value (a string, a negative window or nan would otherwise fail deep in a rule)."""
    spec = {"type": "bool"} if key == "enabled" else schema().get(table, {}).get(key)
    if spec is None:
        return
    kind = spec["type"]
    # bool is an int to Python: `critical_count = true` is not a count, `enabled = 1` not a switch
    wrong = not isinstance(value, _TYPES[kind]) or (kind != "bool" and isinstance(value, bool))
    if not wrong and kind != "bool":
        low, high = spec.get("min"), spec.get("max")
        wrong = value != value or (low is not None and value < low) or (high is not None and value > high)
        need = f"{'an integer' if kind == 'int' else 'a number'} from {low} to {high}"
    else:
        need = "true or false" if kind == "bool" else f"{'an integer' if kind == 'int' else 'a number'}"
    if wrong:
        raise DataFileError(f"{origin}: [{table}] {key} = {value!r}: must be {need}")


@lru_cache(maxsize=1)
def _defaults() -> dict:
    return load_toml(DEFAULTS_FILE)


def defaults() -> dict:
    return copy.deepcopy(_defaults())


@dataclass
class AnalysisConfig:
    """Everything the diagnosis can be told: thresholds per rule, and which groups and times."""

    thresholds: dict = field(default_factory=defaults)
    groups: list[str] = field(default_factory=list)   # only these groups (empty: all)
    since: datetime | None = None
    until: datetime | None = None
    # Where the thresholds came from besides the shipped defaults, in the order applied
    # ("./pyproject.toml [tool.rebalance-doctor]", a --config file): the report names them.
    sources: list[str] = field(default_factory=list)

    def of(self, rule: str) -> dict:
        return self.thresholds.get(rule, {})

    def enabled(self, rule: str) -> bool:
        return bool(self.of(rule).get("enabled", True))


def merge(base: dict, overrides: dict, origin: str) -> dict:
    """Overrides on top of the defaults; an unknown table or key is an error (a typo must show)."""
    merged = copy.deepcopy(base)
    for table, values in overrides.items():
        if table == "version":
            continue
        if table not in merged or not isinstance(values, dict):
            raise DataFileError(f"{origin}: unknown rule or section [{table}] "
                                f"(known: {', '.join(k for k in merged if k != 'version')})")
        for key, value in values.items():
            if key != "enabled" and key not in merged[table]:
                raise DataFileError(f"{origin}: [{table}] has no setting {key!r} "
                                    f"(known: {', '.join(merged[table]) or 'none'})")
            check(table, key, value, origin)
            merged[table][key] = value
    return merged


def load(config_file: Path | None = None, cwd: Path | None = None) -> AnalysisConfig:
    """Defaults, then [tool.rebalance-doctor] of ./pyproject.toml, then --config FILE."""
    thresholds = defaults()
    sources = []
    pyproject = (cwd or Path.cwd()) / "pyproject.toml"
    if pyproject.is_file():
        section = load_toml(pyproject).get("tool", {}).get("rebalance-doctor")
        if section:
            thresholds = merge(thresholds, section, f"{pyproject} [tool.rebalance-doctor]")
            sources.append(f"{pyproject} [tool.rebalance-doctor]")
    if config_file is not None:
        thresholds = merge(thresholds, load_toml(config_file), str(config_file))
        sources.append(str(config_file))
    return AnalysisConfig(thresholds=thresholds, sources=sources)
