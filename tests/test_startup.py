"""Start-up: what a command imports before it needs it (issue 33). Behaviour, not time: the modules a
fresh interpreter holds after importing the CLI, or after a run with nothing to read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rebalance_doctor.cli.choices import layout_names
from rebalance_doctor.core.paths import patterns_dir
from rebalance_doctor.core.toml import load_toml

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("pyarrow", "numpy", "pyspark", "pandas")
# typer 0.29 validates every parameter with pydantic TypeAdapters: importing pydantic and building them is some 60 ms
# of a 0.23 s `events` on an empty file (pyproject.toml keeps typer below 0.29)
VALIDATORS = ("pydantic", "pydantic_core")


def _modules_after(code: str, tmp_path: Path) -> set[str]:
    """The modules loaded when ``code`` has run in a fresh interpreter (its exit handlers included:
    the CLI leaves through os._exit after running them)."""
    out = tmp_path / "modules.json"
    prelude = ("import atexit, json, sys\n"
               f"atexit.register(lambda: open({str(out)!r}, 'w').write(json.dumps(sorted(sys.modules))))\n")
    subprocess.run([sys.executable, "-c", prelude + code], cwd=ROOT, capture_output=True, timeout=120)
    return set(json.loads(out.read_text()))


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


def test_importing_the_cli_imports_no_columnar_or_spark_library(tmp_path):
    modules = _modules_after("import rebalance_doctor.cli.app", tmp_path)
    assert "rebalance_doctor.cli.app" in modules
    assert _heavy(modules) == []
    # rich's tables and progress bars, the readers and the diagnosis come with the commands that use them
    assert not {"rich.table", "rich.progress", "rebalance_doctor.core.reader", "rebalance_doctor.api"} & modules


def test_help_imports_no_reader(tmp_path):
    modules = _modules_after("import sys; sys.argv = ['rebalance-doctor', '--help']\n"
                             "from rebalance_doctor.cli.app import main; main()", tmp_path)
    assert _heavy(modules) == []
    assert "rebalance_doctor.core.reader" not in modules and "rebalance_doctor.core.packs" not in modules


def test_events_on_an_empty_file_imports_no_numpy_nor_pyarrow(tmp_path):
    empty = tmp_path / "server.log"
    empty.write_bytes(b"")
    modules = _modules_after(f"import sys; sys.argv = ['rebalance-doctor', 'events', {str(empty)!r}, '-o', '/dev/null']\n"
                             "from rebalance_doctor.cli.app import main; main()", tmp_path)
    assert "rebalance_doctor.engines.local" in modules   # it did run the reading engine
    assert _heavy(modules) == []
    assert not [m for m in modules if m.split(".")[0] in VALIDATORS]
    assert "rebalance_doctor.api" not in modules


def test_the_layout_names_in_the_help_are_the_shipped_layouts():
    parsed = [layout["name"] for layout in load_toml(patterns_dir() / "layouts.toml")["layout"]]
    assert layout_names() == parsed
