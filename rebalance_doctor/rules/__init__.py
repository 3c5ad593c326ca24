"""The diagnosis: one module per rule (its docstring is its documentation), thresholds in data."""

from __future__ import annotations

import importlib
from typing import Any

# Loaded on first use (PEP 562): the rule engine pulls in the classification and the timeline,
# which `events` and `batch` never run, and `rules.config` is read by every CLI start.
_LAZY = {"AnalysisConfig": ".config", "Finding": ".finding", "Note": ".finding", "SEVERITIES": ".finding",
         "RULE_IDS": ".engine", "rule_module": ".engine", "rules": ".engine", "run": ".engine"}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name], __name__), name)
