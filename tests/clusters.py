"""Real Spark cluster managers on 127.0.0.1 for the cluster tests, and the Pythons they run.

Everything comes from the pyspark package itself: a standalone master and worker
(``bin/spark-class``) and a Spark Connect server (``bin/spark-submit --class ...SparkConnectServer``).
Each service listens on 127.0.0.1 only (``SPARK_LOCAL_IP``, explicit ``--host`` and binding
addresses) on ports chosen free, is started in its own process group, and is stopped by its pid
(the group: the worker's executors and their Python workers go with it). Nothing here talks to
an address other than 127.0.0.1.

The Pythons: a wheelhouse (the project's wheel and every dependency's, built once per test
session, or the one ``.ci/run`` built: ``RD_WHEELHOUSE``), and from it, offline, a virtual
environment with the dependencies but without the project: the executors' Python.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOOPBACK = "127.0.0.1"
# The executors' environment: the project's dependencies (pyproject.toml) without the project.
EXECUTOR_REQUIREMENTS = ("pyarrow>=14", "numpy>=1.22", "regex>=2023.0", "python-dateutil>=2.8",
                         "ahocorasick_rs>=1.0", "zstandard>=0.22")


# What a spark-submit driver needs beside the project (pyspark comes from spark-submit itself):
# pyspark's Arrow functions import pandas on the driver.
DRIVER_EXTRAS = ("pandas>=2.2,<3",)


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


def loopback_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"SPARK_LOCAL_IP": LOOPBACK, "SPARK_LOCAL_HOSTNAME": "localhost",
                "SPARK_HOME": str(spark_home()), "SPARK_NO_DAEMONIZE": "1"})
    env.pop("SPARK_REMOTE", None)
    env.pop("PYSPARK_PYTHON", None)
    env.update(extra or {})
    return env


@dataclass
class Service:
    """One JVM started by a test, stopped by its pid (its process group)."""

    name: str
    process: subprocess.Popen
    log: Path
    ports: dict[str, int] = field(default_factory=dict)

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, grace: float = 20.0) -> None:
        if self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            self.process.wait(grace)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""


def _die_with_the_tests() -> None:
    """In the child before exec: the kernel kills it when the test process dies. A pytest killed
    by a timeout runs no finalizer, and its JVMs stayed behind; spark-class execs the JVM in the
    same process, so the JVM keeps this."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def start(name: str, command: list[str], log_dir: Path, env: dict[str, str], ports: dict[str, int]) -> Service:
    log = log_dir / f"{name}.log"
    handle = open(log, "wb")
    try:
        process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, env=env, cwd=log_dir,
                                   start_new_session=True, stdin=subprocess.DEVNULL, preexec_fn=_die_with_the_tests)
    finally:
        handle.close()
    return Service(name, process, log, ports)


def wait_for(service: Service, ready, timeout: float, what: str) -> None:
    """Poll ``ready()`` until true; a service that died or a timeout fails with its log's tail."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not service.alive():
            raise RuntimeError(f"{service.name} exited ({service.process.returncode}) before {what}:\n"
                               + service.log_text()[-3000:])
        if ready():
            return
        time.sleep(0.3)
    raise RuntimeError(f"{service.name}: no {what} within {timeout:.0f}s:\n" + service.log_text()[-3000:])


def listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((LOOPBACK, port)) == 0


def start_master(log_dir: Path) -> Service:
    port, ui = free_port(), free_port()
    command = [str(spark_home() / "bin" / "spark-class"), "org.apache.spark.deploy.master.Master",
               "--host", LOOPBACK, "--port", str(port), "--webui-port", str(ui)]
    master = start("master", command, log_dir, loopback_env({"SPARK_DAEMON_MEMORY": "256m"}),
                   {"rpc": port, "ui": ui})
    wait_for(master, lambda: listening(port), 90, "the master listening")
    return master


def master_url(master: Service) -> str:
    return f"spark://{LOOPBACK}:{master.ports['rpc']}"


def start_worker(master: Service, log_dir: Path, cores: int = 4, memory: str = "3g", name: str = "worker") -> Service:
    port, ui = free_port(), free_port()
    work = log_dir / f"{name}-work"
    work.mkdir(exist_ok=True)
    command = [str(spark_home() / "bin" / "spark-class"), "org.apache.spark.deploy.worker.Worker",
               master_url(master), "--host", LOOPBACK, "--port", str(port), "--webui-port", str(ui),
               "--cores", str(cores), "--memory", memory, "--work-dir", str(work)]
    worker = start(name, command, log_dir, loopback_env({"SPARK_DAEMON_MEMORY": "256m"}), {"rpc": port, "ui": ui})
    wait_for(worker, lambda: "Successfully registered with master" in worker.log_text(), 90,
             "registration with the master")
    return worker


def start_connect_server(master: Service, log_dir: Path, executor_python: Path) -> Service:
    """A Spark Connect server whose sessions run on the standalone cluster, with the executors'
    Python for Python UDFs; gRPC bound to 127.0.0.1."""
    port = free_port()
    command = [str(spark_home() / "bin" / "spark-submit"),
               "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
               "--name", "rebalance-doctor-tests-connect", "--master", master_url(master),
               "--conf", f"spark.connect.grpc.binding.address={LOOPBACK}",
               "--conf", f"spark.connect.grpc.binding.port={port}",
               "--conf", f"spark.driver.host={LOOPBACK}", "--conf", f"spark.driver.bindAddress={LOOPBACK}",
               "--conf", "spark.ui.enabled=false", "--conf", "spark.executor.cores=1",
               "--conf", "spark.executor.memory=512m", "--conf", "spark.cores.max=2",
               "--conf", "spark.driver.memory=768m",
               "--conf", f"spark.pyspark.python={executor_python}"]
    server = start("connect", command, log_dir, loopback_env({"PYSPARK_PYTHON": str(executor_python)}),
                   {"grpc": port})
    wait_for(server, lambda: listening(port), 120, "the Connect server listening")
    return server


# ---------------------------------------------------------------- Pythons


def run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, command))} failed ({done.returncode}):\n"
                           f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    return done


def build_wheelhouse(target: Path) -> Path:
    """The project's wheel and its dependencies' wheels (with the executors' extras) in one
    directory, for offline installs of every test venv."""
    target.mkdir(parents=True, exist_ok=True)
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(target), str(REPO)], timeout=600)
    run([sys.executable, "-m", "pip", "wheel", "-q", "-w", str(target), *EXECUTOR_REQUIREMENTS, *DRIVER_EXTRAS,
         "venv-pack", "typer>=0.12", "rich>=13"], timeout=900)
    return target


def project_wheel(wheelhouse: Path) -> Path:
    wheels = sorted(wheelhouse.glob("rebalance_doctor-*.whl"), key=lambda p: p.stat().st_mtime)
    if not wheels:
        raise RuntimeError(f"no rebalance_doctor wheel in {wheelhouse}")
    return wheels[-1]


def make_venv(target: Path, wheelhouse: Path, requirements: list[str]) -> Path:
    """A virtual environment (no system site-packages) with ``requirements`` from the wheelhouse
    only; its python."""
    run([sys.executable, "-m", "venv", str(target)], timeout=300)
    python = target / "bin" / "python"
    run([str(python), "-m", "pip", "install", "-q", "--no-index", "--find-links", str(wheelhouse),
         *requirements], timeout=900)
    return python
