"""Host identity: which machine or process wrote a log.

From the path: the file's name when it names something (``node0.log``), else the nearest
directory that does (``broker-1/server.log``); a rolled file (``server.log.1``,
``server.log.2024-01-02-03``, ``app-2024-01-02.1.log.gz``) has the live file's host; files whose
names collide in different directories (``worker-a/payments.log``, ``worker-b/payments.log``) are
told apart by their directories. Per line, a container prefix that names a container (docker
compose's ``kafka-1  | ``, kubectl's ``[pod/NAME/CONTAINER] ``) gives the line's host
(``core/parse.py``). ``--host`` overrides all of it.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

# Names that say nothing about the host: the host is then taken from the directory.
GENERIC_STEMS = {
    "server", "connect", "app", "application", "kafka", "controller", "stdout", "stderr",
    "console", "log", "logs", "output", "out", "streams", "consumer", "broker", "client",
    "state-change", "kafka-request", "log-cleaner", "kafka-authorizer", "worker", "main",
}
GENERIC_DIRS = {"logs", "log", "kafka-logs", "var", "tmp", "data", "incident", "bundle", "."}
# Rotation, compression, log-type and date suffixes, taken off the end of a name in any order.
_SUFFIX = re.compile(r"\.(?:log|json|jsonl|ndjson|txt|out|gz|bz2|zst|zstd|xz|\d+|\d{4}-\d\d-\d\d(?:[-_]\d\d)*)$")
# A date stamp a rolling policy puts inside the name: app-2024-01-02, app_20240102, app.2024-01-02-03.
_DATE_STAMP = re.compile(r"[-_.]\d{4}-?\d\d-?\d\d(?:[-_T.]?\d\d){0,3}$")
# Directory names that are dates or numbers (day folders, rotation folders) name no host.
_NO_HOST_DIR = re.compile(r"^\d{4}-?\d\d-?\d\d(?:[-_T.]?\d\d){0,3}$|^\d+$")


def infer_host(relative: str, root: Path) -> str:
    """A host name from the path: the file's stem (node0.log), else the nearest telling directory,
    else the input directory's own name, else "localhost"."""
    stem = stem_host(relative)
    if stem:
        return stem
    directories = telling_directories(relative)
    if directories:
        return directories[0]
    root_name = root.resolve().name
    return root_name if root_name and _tells(root_name) else "localhost"


def stem_host(relative: str) -> str | None:
    """The host the file's own name gives, None when its name is generic (server.log)."""
    stem = bare_stem(_parts(relative)[-1])
    return stem if stem and stem.lower() not in GENERIC_STEMS and not _NO_HOST_DIR.match(stem) else None


def telling_directories(relative: str) -> list[str]:
    """The directories of a relative path that name something, nearest first."""
    return [d for d in reversed(_parts(relative)[:-1]) if _tells(d)]


def bare_stem(name: str) -> str:
    """The file name without rotation, date, compression and log-type suffixes, in any order.

    ``application.2024-05-01.log`` -> ``application``; ``streams.json.log.1.gz`` -> ``streams``;
    ``kafka-2.log.3`` -> ``kafka-2``; ``app-2024-01-02.1.log.gz`` -> ``app``.
    """
    stem = name
    while True:
        shorter = _DATE_STAMP.sub("", _SUFFIX.sub("", stem))
        if shorter == stem or not shorter:
            return stem
        stem = shorter


def separate_collisions(sources: list) -> None:
    """Sources whose names give them one host but that live in different directories (not the
    rolled files of one log) take their directories' names instead: ``worker-a/payments.log``
    and ``worker-b/payments.log`` are two hosts, not one "payments"."""
    directories: dict[str, set[str]] = {}
    for source in sources:
        if stem_host(source.name) == source.host:
            directories.setdefault(source.host, set()).add(_directory_key(source))
    for source in sources:
        if len(directories.get(source.host, ())) > 1 and stem_host(source.name) == source.host:
            source.host = _directory_host(source) or source.host


def _parts(relative: str) -> list[str]:
    return relative.split("!")[-1].split("/")


def _tells(directory: str) -> bool:
    return directory.lower() not in GENERIC_DIRS and not _NO_HOST_DIR.match(directory)


def _directory_key(source) -> str:
    """Where a source lives: its directory on disk, or its bundle and the member's directory."""
    inner = str(PurePosixPath(source.name.split("!")[-1]).parent)
    if source.path and source.bundle:
        return f"{source.path}!{inner}"
    if source.path:
        return str(Path(source.path).resolve().parent)
    return inner


def _directory_host(source) -> str | None:
    """The nearest telling directory of the source's path below its input, or, for a file given
    by itself, of its path on disk; None when its directories name no host (day folders)."""
    inner = _parts(source.name)
    if len(inner) > 1 or "!" in source.name:
        directories = telling_directories(source.name)
        return directories[0] if directories else None
    if source.path:
        for parent in Path(source.path).resolve().parents:
            if parent.name and _tells(parent.name):
                return parent.name
    return None
