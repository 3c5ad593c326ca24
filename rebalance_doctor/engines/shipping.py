"""The tool's own code as one zip, for Spark executors whose Python does not have it.

An executor needs the ``rebalance_doctor`` package importable to run the parsing core and the
rules; its Python needs only the dependencies. The driver zips the package it is running (code,
packs and the other data files: a wheel's copy, or the source tree's ``rebalance_doctor/`` plus
``patterns/`` for an editable install) and adds the zip to the session (``engines.spark``):
Python workers put it on ``sys.path`` and import from it.

The zip is named by a hash of what goes into it and built once per content: an edited editable
install gives another name, so it is shipped anew instead of executors keeping a stale copy. It
carries each module's bytecode beside its source (unchecked hash-based .pyc): a worker imports
without compiling ~600 KB of Python, and a worker on another Python version ignores that
bytecode (its magic number differs) and compiles the source instead.

No pyspark here: building the zip is plain file work, tested without a JVM.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import os
import sys
import tempfile
import zipfile
from pathlib import Path

from ..core import cache
from ..core.paths import PACKAGE_ROOT, patterns_dir

PACKAGE = "rebalance_doctor"
_SKIPPED_DIRS = {"__pycache__"}
_SKIPPED_SUFFIXES = (".pyc", ".pyo")
# The dependencies an executor's Python needs (import names), and the ones that only speed it up
# or serve one input format; the probe reports each one that is missing.
REQUIRED_MODULES = ("pyarrow", "numpy", "regex", "dateutil")
OPTIONAL_MODULES = ("ahocorasick_rs", "zstandard")


def _package_files(package_dir: Path = PACKAGE_ROOT) -> list[tuple[str, Path]]:
    """(name in the zip, file) for the package (the running one: its own directory
    rebalance_doctor/), packs included, in a fixed order."""
    files = []
    for directory, dirs, names in os.walk(package_dir):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS)
        for name in sorted(names):
            if name.endswith(_SKIPPED_SUFFIXES):
                continue
            path = Path(directory) / name
            files.append((path.relative_to(package_dir.parent).as_posix(), path))
    inside = {name for name, _ in files}
    if f"{PACKAGE}/patterns/layouts.toml" not in inside:
        # An editable install or a source checkout: the packs live beside the package.
        root = patterns_dir()
        for path in sorted(root.rglob("*.toml")):
            files.append((f"{PACKAGE}/patterns/{path.relative_to(root).as_posix()}", path))
    return files


def package_zip(directory: Path | None = None, package_dir: Path = PACKAGE_ROOT) -> Path:
    """The zip of the running package, built if this content was never zipped before; kept in
    ``directory`` (default: the user's cache directory, else the temporary directory)."""
    files = [(name, path.read_bytes()) for name, path in _package_files(package_dir)]
    digest = hashlib.sha256()
    for name, data in files:
        digest.update(name.encode() + b"\0" + len(data).to_bytes(8, "big") + data)
    # Bytecode depends on the interpreter too: another Python gets its own zip.
    digest.update(importlib.util.MAGIC_NUMBER)
    directory = directory or cache.cache_dir() or Path(tempfile.gettempdir())
    target = directory / "shipped" / f"{PACKAGE}-{digest.hexdigest()[:16]}.zip"
    if target.is_file():
        return target
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files:
            archive.writestr(_entry(name), data)
            if name.endswith(".py"):
                archive.writestr(_entry(name + "c"), _bytecode(name, data))
    target.parent.mkdir(parents=True, exist_ok=True)
    # Written aside then renamed: a concurrent driver never ships half a zip.
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=target.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(buffer.getvalue())
        os.replace(temporary, target)
    except BaseException:
        os.unlink(temporary)
        raise
    return target


def _entry(name: str) -> zipfile.ZipInfo:
    # A fixed date: the same content gives the same bytes.
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def _bytecode(name: str, source: bytes) -> bytes:
    """An unchecked hash-based .pyc (PEP 552), the layout zipimport reads beside the source."""
    from importlib._bootstrap_external import _code_to_hash_pyc

    code = compile(source, f"{PACKAGE}.zip/{name}", "exec", dont_inherit=True)
    return bytes(_code_to_hash_pyc(code, importlib.util.source_hash(source), checked=False))


def probe() -> dict:
    """What an executor's Python is: run inside a Python worker (engines.spark's probe job)."""
    import platform
    import socket

    missing = [name for name in REQUIRED_MODULES if importlib.util.find_spec(name) is None]
    absent = [name for name in OPTIONAL_MODULES if importlib.util.find_spec(name) is None]
    return {"executor": executor_id(), "host": socket.gethostname(), "python": sys.executable,
            "version": platform.python_version(), "missing": missing, "optional_missing": absent}


def probe_json() -> str:
    """``probe`` as JSON: the body of the probe job's Python UDF (a plain UDF, not an Arrow one,
    so that an executor without pyarrow still answers with what it lacks)."""
    import json

    return json.dumps(probe())


def executor_id() -> str:
    """The Spark executor this Python worker serves ("driver" in local mode).

    A Python worker is the child (or, through pyspark's daemon, the grandchild) of its
    executor's JVM, whose command line carries ``--executor-id``. Read from /proc (Linux);
    elsewhere the executor is named by its host and JVM process.
    """
    pid = os.getppid()
    for _ in range(4):
        try:
            arguments = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            break
        if b"--executor-id" in arguments:
            position = arguments.index(b"--executor-id")
            if position + 1 < len(arguments):
                return arguments[position + 1].decode(errors="replace")
        if arguments and arguments[0].endswith(b"java"):
            return "driver"  # a JVM without --executor-id: local mode, the driver's own
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            pid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return f"pid-{os.getppid()}"


__all__ = ["OPTIONAL_MODULES", "REQUIRED_MODULES", "executor_id", "package_zip", "probe", "probe_json"]
