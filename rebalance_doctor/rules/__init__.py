"""The diagnosis: one module per rule (its docstring is its documentation), thresholds in data."""

from .config import AnalysisConfig
from .engine import RULE_IDS, rule_module, rules, run
from .finding import SEVERITIES, Finding, Note

__all__ = ["AnalysisConfig", "Finding", "Note", "RULE_IDS", "SEVERITIES", "rule_module", "rules", "run"]
