"""`rebalance-doctor rules`: the rule documentation (list, explain ID, docs for docs/rules.md)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..core.writers import write_atomic
from ..rules import RULE_IDS, rule_module
from ..rules.config import defaults
from ..rules.docs import markdown
from . import common

app = typer.Typer(help="The diagnosis rules and their documentation.", no_args_is_help=True,
                  rich_markup_mode=None, add_completion=False)


@app.command("list")
def list_rules() -> None:
    """Every rule id with its usual severity and one-line summary."""
    for rule_id in RULE_IDS:
        module = rule_module(rule_id)
        summary = (module.__doc__ or "").strip().splitlines()[0]
        typer.echo(f"{rule_id:28} {module.SEVERITY:9} {summary}")


@app.command("explain")
def explain(rule_id: Annotated[str, typer.Argument(help="A rule id from `rules list`.")]) -> None:
    """A rule's documentation: symptom (real log lines), why it happens, remediation, thresholds."""
    try:
        module = rule_module(rule_id)
    except KeyError:
        raise common.fail(f"unknown rule {rule_id!r}; known: {', '.join(RULE_IDS)}")
    typer.echo(f"{rule_id} ({module.SEVERITY})\n")
    typer.echo((module.__doc__ or "").strip())
    settings = defaults().get(rule_id, {})
    if settings:
        typer.echo("\nThresholds (override with --config FILE or [tool.rebalance-doctor." + rule_id + "]):")
        for key, value in settings.items():
            typer.echo(f"    {key} = {value}")


@app.command("docs")
def docs(out: Annotated[Optional[str], typer.Option("--out", "-o", help="Write to this file instead of stdout.")] = None) -> None:
    """Print docs/rules.md (generated from the rule docstrings and thresholds.toml)."""
    text = markdown()
    if out:
        with common.errors():
            write_atomic(out, text)
    else:
        typer.echo(text, nl=False)
