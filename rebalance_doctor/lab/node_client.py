"""The lab's Node.js clients: their npm packages installed once into the lab cache, the program that runs them."""

from __future__ import annotations

import fcntl
import subprocess
from pathlib import Path

from .errors import ENVIRONMENT, LabError
from .releases import cache_root, catalog, require_tool

PROGRAM = Path(__file__).resolve().parent / "js" / "labclient.js"


def require_node() -> str:
    return require_tool("node", "it runs the lab's KafkaJS clients")


def modules(package: str) -> Path:
    """The node_modules directory holding ``package`` at the version releases.toml pins (npm install on first use)."""
    version = catalog()["npm"][package]
    home = cache_root() / "npm" / f"{package}-{version}"
    done = home / "installed"
    if done.exists():
        return home / "node_modules"
    npm = require_tool("npm", f"it installs {package} {version}")
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as lock:       # two recordings installing at once: one does it
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            run = subprocess.run([npm, "install", "--prefix", str(home), f"{package}@{version}", "--no-audit",
                                  "--no-fund", "--no-save"], capture_output=True, text=True, timeout=300)
            if run.returncode != 0 or not (home / "node_modules" / package).exists():
                reason = next((line for line in run.stderr.splitlines() if "ERR" in line), run.stderr.strip()[:300])
                raise LabError(f"npm could not install {package}@{version}: {reason or 'npm failed'}", ENVIRONMENT)
            done.write_text("ok\n", encoding="utf-8")
    return home / "node_modules"
