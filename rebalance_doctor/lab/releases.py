"""Kafka releases from Maven Central: resolved once with Maven into the lab cache."""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..core.toml import load_toml
from .errors import ENVIRONMENT, USAGE, LabError

HERE = Path(__file__).resolve().parent
RESOLVE_SECONDS = 900


@lru_cache(maxsize=1)
def catalog() -> dict:
    return load_toml(HERE / "releases.toml")


def cache_root() -> Path:
    configured = os.environ.get("REBALANCE_DOCTOR_LAB_CACHE")
    if configured:
        return Path(configured)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rebalance-doctor" / "lab"


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


@dataclass(frozen=True)
class Release:
    version: str
    home: Path             # the cache directory of this release: lib/, classes/
    logging: str           # "reload4j" or "log4j2"

    @property
    def lib(self) -> Path:
        return self.home / "lib"

    @property
    def classpath(self) -> str:
        return str(self.lib / "*")

    def logging_config(self, role: str) -> Path:
        """The log configuration file of ``role`` (broker, connect, client) for this release's stack."""
        return HERE / "logging" / catalog()["logging"][self.logging][role]

    def logging_property(self, role: str) -> str:
        """The JVM option that points the logging stack at its configuration."""
        prop = catalog()["logging"][self.logging]["property"]
        path = self.logging_config(role)
        return f"-D{prop}={path.as_uri() if self.logging == 'reload4j' else path}"

    def at_least(self, version: str) -> bool:
        return version_tuple(self.version) >= version_tuple(version)

    @property
    def mirror_version(self) -> str:
        """The release of MirrorMaker 2 (``connect-mirror``) run beside these brokers: the same, unless Maven
        Central has no ``connect-mirror`` of it (releases.toml, [mirror.runs])."""
        return catalog()["mirror"]["runs"].get(self.version, self.version)

    @property
    def mirror_classpath(self) -> str:
        """MirrorMaker 2's classpath: ``connect-mirror`` at ``mirror_version`` with its own dependencies (its
        connect-runtime and clients, not the brokers' when the versions differ) and this release's logging stack,
        resolved once into ``mirror-VERSION/lib`` of the release's cache."""
        home = self.home / f"mirror-{self.mirror_version}"
        if not (home / "resolved").exists():
            home.mkdir(parents=True, exist_ok=True)
            with open(home / ".lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not (home / "resolved").exists():
                    deps = [("org.apache.kafka", a, self.mirror_version) for a in catalog()["mirror"]["artifacts"]]
                    _resolve_into(self.mirror_version, self.logging, home, deps)
        return str(home / "lib" / "*")


def logging_stack(version: str) -> str:
    stacks = catalog()["logging"]
    chosen = None
    for name, stack in stacks.items():
        if version_tuple(version) >= version_tuple(stack["since"]):
            if chosen is None or version_tuple(stack["since"]) > version_tuple(stacks[chosen]["since"]):
                chosen = name
    if chosen is None:
        raise LabError(f"Kafka {version}: the lab runs releases from 2.4 on", USAGE)
    return chosen


# The Debian package that installs each tool the lab runs.
_DEBIAN = {"java": "openjdk-17-jdk-headless", "javac": "openjdk-17-jdk-headless", "mvn": "maven",
           "go": "golang-go", "node": "nodejs npm", "npm": "npm"}


def require_tool(name: str, why: str) -> str:
    """The path of a tool the lab runs, or a one-line LabError (exit 5) saying why it is needed and how to get it."""
    path = shutil.which(name)
    if path is None:
        raise LabError(f"the lab needs {name} ({why}); install it (Debian: apt-get install {_DEBIAN[name]})",
                       ENVIRONMENT)
    return path


def _pom(version: str, logging: str, deps: list[tuple[str, str, str]] | None = None) -> str:
    deps = list(deps or [("org.apache.kafka", artifact, version) for artifact in catalog()["artifacts"]])
    deps += [tuple(coordinate.split(":")) for coordinate in catalog()["logging"][logging]["artifacts"]]
    body = "".join(f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
                   for g, a, v in deps)
    return ('<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
            f'<groupId>rebalance-doctor.lab</groupId><artifactId>kafka-{version}</artifactId><version>1</version>'
            f'<packaging>pom</packaging><dependencies>{body}</dependencies></project>\n')


def resolve(version: str) -> Release:
    """The release ``version``, resolved into the cache on first use (Maven, Maven Central)."""
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise LabError(f"--kafka {version!r}: give a release as MAJOR.MINOR.PATCH, e.g. 4.4.0", USAGE)
    logging = logging_stack(version)
    home = cache_root() / f"kafka-{version}"
    done = home / "resolved"
    if done.exists():
        return Release(version, home, logging)
    require_tool("java", "Kafka runs on a Java 17+ runtime")
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as lock:      # two processes resolving one release: one does it
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            try:
                _resolve_into(version, logging, home)
            except LabError:
                (home / "pom.xml").unlink(missing_ok=True)
                shutil.rmtree(home / "lib.partial", ignore_errors=True)
                raise
    return Release(version, home, logging)


def _resolve_into(version: str, logging: str, home: Path, deps: list[tuple[str, str, str]] | None = None) -> None:
    """``deps`` (group, artifact, version) with their dependencies and the logging stack into ``home/lib``; by
    default the release's artifacts (releases.toml)."""
    done = home / "resolved"
    mvn = require_tool("mvn", "Kafka's jars are resolved from Maven Central")
    (home / "pom.xml").write_text(_pom(version, logging, deps), encoding="utf-8")
    staging = home / "lib.partial"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        run = subprocess.run([mvn, "-B", "-q", "-f", str(home / "pom.xml"), "dependency:copy-dependencies",
                              f"-DoutputDirectory={staging}", "-DincludeScope=runtime"],
                             capture_output=True, text=True, timeout=RESOLVE_SECONDS)
    except subprocess.TimeoutExpired:
        raise LabError(f"resolving Kafka {version} from Maven Central took over {RESOLVE_SECONDS} s", ENVIRONMENT)
    if run.returncode != 0:
        output = run.stdout + run.stderr
        missing = re.search(r"(?:Could not find artifact |)([\w.-]+:[\w.-]+):(?:jar|pom):([\w.-]+)\)? was not found|"
                            r"Could not find artifact ([\w.-]+:[\w.-]+):(?:jar|pom):([\w.-]+)", output)
        if missing:
            artifact = missing[1] or missing[3]
            code = USAGE if artifact == "org.apache.kafka:kafka_2.13" else ENVIRONMENT
            raise LabError(f"Kafka {version}: {artifact}:{missing[2] or missing[4]} is not on Maven Central", code)
        reason = next((line.strip() for line in output.splitlines() if "[ERROR]" in line), "mvn failed")
        raise LabError(f"resolving Kafka {version} with Maven failed: {reason[:300]}", ENVIRONMENT)
    for jar in staging.glob("*.jar"):   # one slf4j binding: the stack this release's distribution ships
        if any(jar.name.startswith(prefix + "-") for prefix in catalog()["logging"][logging]["drop"]):
            jar.unlink()
    lib = home / "lib"
    shutil.rmtree(lib, ignore_errors=True)
    staging.rename(lib)
    done.write_text(version + "\n", encoding="utf-8")
