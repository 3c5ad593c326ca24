"""`rebalance-doctor rules`: the rule documentation (list, explain ID, docs for docs/rules.md)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from . import common
from .output import payload, report_console

def _complete_rule(incomplete: str) -> list[str]:
    from ..rules import RULE_IDS

    return [r for r in RULE_IDS if r.startswith(incomplete)]


app = typer.Typer(help="The diagnosis rules and their documentation.", no_args_is_help=True,
                  rich_markup_mode=None, add_completion=False)


@app.command("list")
def list_rules() -> None:
    """Every rule id with its usual severity and one-line summary."""
    from ..rules import RULE_IDS, rule_module

    with payload():
        for rule_id in RULE_IDS:
            module = rule_module(rule_id)
            summary = (module.__doc__ or "").strip().splitlines()[0]
            typer.echo(f"{rule_id:28} {module.SEVERITY:9} {summary}")


@app.command("explain")
def explain(rule_id: Annotated[str, typer.Argument(help="A rule id from `rules list`.", autocompletion=_complete_rule)]) -> None:
    """A rule's documentation: symptom (real log lines), why it happens, remediation, thresholds."""
    from rich.markdown import Markdown  # markdown-it and pygments: only for this command

    from ..rules import RULE_IDS
    from ..rules.config import defaults
    from ..rules.docs import rule_markdown

    if rule_id not in RULE_IDS:
        raise common.fail(f"unknown rule {rule_id!r}; known: {', '.join(RULE_IDS)}")
    text = rule_markdown(rule_id) + (
        f"\nOverride with `--config FILE` or a `[tool.rebalance-doctor.{rule_id}]` table in ./pyproject.toml.\n"
        if defaults().get(rule_id) else "")
    with payload():
        report_console().print(Markdown(text, code_theme="ansi_light", inline_code_lexer=None))


@app.command("docs")
def docs(out: Annotated[Optional[str], typer.Option("--out", "-o", help="Write to this file instead of stdout.")] = None) -> None:
    """Print docs/rules.md (generated from the rule docstrings and thresholds.toml)."""
    from ..core.writers import write_atomic
    from ..rules.docs import markdown

    text = markdown()
    if out:
        with common.errors():
            write_atomic(out, text)
    else:
        typer.echo(text, nl=False)
