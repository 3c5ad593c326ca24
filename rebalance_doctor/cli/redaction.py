"""`--redact`, `--redact-key`, `--redact-map`: the options every command that prints identifiers takes, and the
redactor they make (``report/redact.py`` does the work)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from . import common

RedactOpt = Annotated[bool, typer.Option("--redact", help="Replace host names, IP addresses, group, topic, member, "
                                         "client, instance and transactional ids by stable placeholders (host-1, "
                                         "group-A, 10.x.x.1) in every output, evidence lines included; Kafka's words, "
                                         "config names, numbers and rule ids stay.")]
RedactKeyOpt = Annotated[Optional[str], typer.Option("--redact-key", metavar="KEY",
                                                     help="Redact (implies --redact) with placeholders derived from "
                                                     "an HMAC of each value with KEY: two reports redacted with one "
                                                     "key name the same host the same way. --redact alone takes the "
                                                     "key from REBALANCE_DOCTOR_REDACT_KEY when it is set (out of "
                                                     "the shell's history).")]
RedactMapOpt = Annotated[Optional[Path], typer.Option("--redact-map", metavar="FILE", help="Redact (implies "
                                                      "--redact) and write the mapping (placeholder -> original, "
                                                      "JSON) to FILE; only written when asked. Keep it private.")]


def asked(redact: bool, key: str | None, mapping: Path | None) -> bool:
    return bool(redact or key is not None or mapping is not None)


def key_of(redact: bool, key: str | None, mapping: Path | None) -> str | None:
    """The key to redact with: ``--redact-key``, else (when redacting) REBALANCE_DOCTOR_REDACT_KEY."""
    if asked(redact, key, mapping) and key is None:
        return os.environ.get("REBALANCE_DOCTOR_REDACT_KEY") or None
    return key


def check_map(mapping: Path | None) -> None:
    """The mapping holds the original names: never standard output; a path refused before anything is read."""
    if mapping is None:
        return
    if str(mapping) in ("-", "/dev/stdout"):
        raise common.fail("--redact-map: the mapping holds the original names; give a file, not standard output")
    from ..core.writers import check_target

    with common.errors():
        check_target(mapping)


def redactor(redact: bool, key: str | None, mapping: Path | None):
    """A ``report.redact.Redactor`` when redaction is asked for, else None."""
    if not asked(redact, key, mapping):
        return None
    from ..report.redact import Redactor

    return Redactor(key_of(redact, key, mapping))


def refuse(command: str, why: str, redact: bool, key: str | None, mapping: Path | None) -> None:
    """One line, exit 2: redaction asked where it cannot apply (rather than output that looks redacted and is not)."""
    if asked(redact, key, mapping):
        raise common.fail(f"--redact is not available {command}: {why}")


__all__ = ["RedactKeyOpt", "RedactMapOpt", "RedactOpt", "asked", "check_map", "key_of", "redactor", "refuse"]
