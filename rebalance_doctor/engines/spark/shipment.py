"""The pattern files a run reads with, carried to the executors as text and installed there once per machine."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from ...core.options import ReadOptions
from ...core.paths import patterns_dir


def _shipment(options: ReadOptions) -> dict:
    """The text of every pattern file the core will load, keyed by relative path."""
    root = patterns_dir()
    shipped = {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
               for p in sorted(root.rglob("*.toml"))}
    extra = []
    for given in options.packs:
        given = Path(given)
        if given.is_dir():
            extra.append({p.name: p.read_text(encoding="utf-8") for p in sorted(given.glob("*.toml"))})
        elif given.is_file():
            extra.append({given.name: given.read_text(encoding="utf-8")})
        else:
            extra.append(None)  # the executor reports it exactly like the local engine
    return {"patterns": shipped, "extra": extra, "missing": [str(p) for p in options.packs]}


def packs_digest(options: ReadOptions) -> str:
    """A hash of every pattern file a run reads with (shipped packs, layouts, prefixes, --packs):
    what produced a table's events, beyond the packs' declared versions."""
    return hashlib.sha256(json.dumps(_shipment(options), sort_keys=True).encode()).hexdigest()[:16]


_INSTALLED: dict[str, ReadOptions] = {}


def _install(shipment: dict, options: ReadOptions) -> ReadOptions:
    """Write the shipped pattern files once per machine; options pointing at them.

    The directory is named by the content's hash, so every Python worker of a node (they exit
    without running atexit hooks) shares one copy per pack set instead of leaving one each.
    """
    key = hashlib.sha256(json.dumps(shipment, sort_keys=True).encode()).hexdigest()
    installed = _INSTALLED.get(key)
    if installed is not None:
        return installed
    root = Path(tempfile.gettempdir()) / f"rebalance-doctor-patterns-{key[:20]}"
    if not (root / "complete").is_file():
        staging = Path(tempfile.mkdtemp(prefix=root.name + ".", dir=root.parent))
        for relative, text in shipment["patterns"].items():
            target = staging / "patterns" / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        for number, files in enumerate(shipment["extra"]):
            if files is not None:
                directory = staging / f"extra-{number}"
                directory.mkdir()
                for name, text in files.items():
                    (directory / name).write_text(text, encoding="utf-8")
        (staging / "complete").write_text(key, encoding="utf-8")
        try:
            os.rename(staging, root)  # atomic: a concurrent worker's copy wins, ours is dropped
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
    packs = [Path(shipment["missing"][number]) if files is None else root / f"extra-{number}"
             for number, files in enumerate(shipment["extra"])]
    os.environ["REBALANCE_DOCTOR_PATTERNS"] = str(root / "patterns")
    installed = replace(options, packs=packs)
    _INSTALLED[key] = installed
    return installed
