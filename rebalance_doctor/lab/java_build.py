"""The lab's Java programs (java/*.java), compiled with javac against a release's jars on first use."""

from __future__ import annotations

import fcntl
import hashlib
import re
import subprocess
from pathlib import Path

from .errors import ENVIRONMENT, LabError
from .releases import Release, require_tool, version_tuple

SOURCES = Path(__file__).resolve().parent / "java"
# A program that needs a newer client API than the oldest release the lab runs says so on its first line.
_SINCE = re.compile(rb"^// lab: since (\d+\.\d+\.\d+)")


def _programs(release: Release) -> list[Path]:
    """The lab programs that compile against ``release`` (a share consumer needs 4.1's KafkaShareConsumer)."""
    out = []
    for path in sorted(SOURCES.glob("*.java")):
        since = _SINCE.match(path.read_bytes())
        if since is None or version_tuple(release.version) >= version_tuple(since[1].decode()):
            out.append(path)
    return out


def classes(release: Release) -> Path:
    """The directory of the compiled lab programs for ``release`` (compiled when the sources changed)."""
    sources = _programs(release)
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()[:12]
    out = release.home / f"classes-{digest}"
    if (out / "compiled").exists():
        return out
    javac = require_tool("javac", "the lab compiles its Java clients against the release")
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".lock", "w") as lock:      # two recordings compiling at once: one does it
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / "compiled").exists():
            _compile(javac, release, sources, out)
    return out


def _compile(javac: str, release: Release, sources: list[Path], out: Path) -> None:
    run = subprocess.run([javac, "-nowarn", "-proc:none", "-d", str(out), "-cp", release.classpath,
                          *map(str, sources)], capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        first = next((line for line in run.stderr.splitlines() if "error" in line), run.stderr.strip()[:300])
        raise LabError(f"compiling the lab clients against Kafka {release.version} failed: {first}", ENVIRONMENT)
    (out / "compiled").write_text("ok\n", encoding="utf-8")
