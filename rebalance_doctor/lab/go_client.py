"""The lab's Go clients: one program per Go library (lab/go/), built once with `go build` against the module releases.toml pins."""

from __future__ import annotations

import fcntl
import os
import subprocess
from pathlib import Path

from .errors import ENVIRONMENT, LabError
from .releases import cache_root, catalog, require_tool

HERE = Path(__file__).resolve().parent / "go"
# library (its name under [go] in releases.toml) -> (Go module, the lab's program for it). A program's
# directory is a Python package name too (no dash), so that the wheel carries it (pyproject package-data).
LIBRARIES = {
    "franz-go": ("github.com/twmb/franz-go", HERE / "labclient.go"),
    "sarama": ("github.com/IBM/sarama", HERE / "sarama" / "labclient.go"),
    "kafka-go": ("github.com/segmentio/kafka-go", HERE / "kafkago" / "labclient.go"),
}
SOURCE = LIBRARIES["franz-go"][1]
MODULE = LIBRARIES["franz-go"][0]
# What the programs share (the command line, the log, the properties, the control file): package labclient/common,
# copied beside a program that imports it.
COMMON = HERE / "common" / "common.go"
_IMPORTS_COMMON = '"labclient/common"'


def stamp(library: str = "franz-go") -> str:
    """What a build of `library`'s program is made from: its source, and the shared package's when it imports it
    (a change to either builds it again)."""
    source = LIBRARIES[library][1].read_text(encoding="utf-8")
    if _IMPORTS_COMMON in source:
        source += "\n// labclient/common\n" + COMMON.read_text(encoding="utf-8")
    return source


def require_go() -> str:
    return require_tool("go", "it builds the lab's Go clients (franz-go, sarama, kafka-go)")


def _run(argv: list[str], home: Path, what: str) -> None:
    # module downloads go through the proxy GOPROXY names; a missing proxy ends the build, not the lab's wait
    try:
        run = subprocess.run(argv, cwd=home, capture_output=True, text=True, timeout=300,
                             env={**os.environ, "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"})
    except subprocess.TimeoutExpired:
        raise LabError(f"{what} took over 300 s (is the Go module proxy reachable?)", ENVIRONMENT)
    if run.returncode != 0:
        lines = [line for line in run.stderr.splitlines() if line.strip()]
        raise LabError(f"{what} failed: {lines[-1] if lines else 'go failed'}", ENVIRONMENT)


def program(library: str = "franz-go") -> Path:
    """The built consumer for the version of `library` releases.toml pins (built on first use)."""
    module, path = LIBRARIES[library]
    version = catalog()["go"][library]
    home = cache_root() / "go" / f"{library}-{version}"
    binary = home / "labclient"
    built = home / "built"
    made_of = stamp(library)
    if built.exists() and built.read_text(encoding="utf-8") == made_of and binary.exists():
        return binary
    go = require_go()
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as lock:       # two recordings building at once: one does it
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (built.exists() and built.read_text(encoding="utf-8") == made_of and binary.exists()):
            source = path.read_text(encoding="utf-8")
            (home / "labclient.go").write_text(source, encoding="utf-8")
            if _IMPORTS_COMMON in source:
                (home / "common").mkdir(exist_ok=True)
                (home / "common" / "common.go").write_text(COMMON.read_text(encoding="utf-8"), encoding="utf-8")
            (home / "go.mod").write_text("module labclient\n\ngo 1.21\n", encoding="utf-8")
            _run([go, "get", f"{module}@{version}"], home, f"go get {module}@{version}")
            _run([go, "build", "-o", str(binary), "."], home, f"go build of lab/go/{path.relative_to(HERE)}")
            built.write_text(made_of, encoding="utf-8")
    return binary
