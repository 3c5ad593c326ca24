"""Input discovery: files, directories, rotated and compressed logs, zip/tar bundles, stdin, pipes.

A ``Source`` is one readable log stream. Nothing is unpacked to disk: compressed files and
bundle members are decompressed as streams (``decode``, ``bundles``). Standard input and pipes
(``<(kubectl logs ...)``, a FIFO) are read once, into a private temporary file that is then an
ordinary input. Everything that cannot be read becomes a ``Skipped`` entry with a reason and a
kind (see ``SKIP_KINDS``), never an exception.
"""

from __future__ import annotations

import atexit
import io
import os
import re
import select
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Iterator

from . import bundles
from .decode import (BZIP2_MAGIC, GZIP_MAGIC, HEAD_BYTES, XZ_MAGIC, ZSTD_MAGIC, Decoded, codec_of, decompressed,
                     open_decoded, text_form, zstd_available)
from .filechange import Identity
from .hosts import infer_host as _infer_host
from .hosts import separate_collisions

ZIP_MAGIC = bundles.ZIP_MAGIC
FIFO_WAIT_SECONDS = float(os.environ.get("REBALANCE_DOCTOR_FIFO_WAIT", "3"))
STDIN = "<stdin>"

# Files that sit beside logs in incident bundles and fixture trees but are not logs (an .html
# report of an earlier run among them: its lines hold many records each, which no log does).
NOT_LOGS = (".py", ".pyc", ".toml", ".md", ".rst", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".pdf",
            ".parquet", ".jar", ".class", ".so", ".exe", ".html", ".htm")
_DUPLICATE = re.compile(r"#\d+$")  # the second member of a bundle with the same path: name#2

# Why something was not read. "missing" and "refused" are usage errors (exit code 2); the
# "lost" kinds mean log data was lost (exit code 3); the others are not logs at all.
SKIP_KINDS = ("missing", "refused", "unreadable", "corrupt", "truncated", "too-deep",
              "not-log", "empty", "output", "link")
LOST_KINDS = ("unreadable", "corrupt", "truncated", "too-deep")
USAGE_KINDS = ("missing", "refused")


@dataclass
class Skipped:
    source: str
    reason: str
    kind: str = "unreadable"   # one of SKIP_KINDS
    size: int = 0              # bytes on disk that were not read (when known)


@dataclass
class Source:
    """One log stream, described by plain data so that worker processes can reopen it."""

    name: str                 # relative display path (bundle members: bundle!member, nested: a!b!c)
    host: str
    size: int                 # bytes on disk (compressed size for compressed inputs)
    path: str | None = None   # filesystem path of the file, or of the bundle holding it
    codec: str = "plain"      # plain, gzip, bz2, zstd, xz (of the file or of the member)
    bundle: str | None = None  # "zip" or "tar": the outermost archive when the stream is a member
    member: str | None = None  # the chain of archive steps to the member (bundles.encode_chain)
    data: bytes | None = None  # bytes given in memory (a remote file's content)
    normalised: bool = False  # its text is transcoded or cleaned (UTF-16, CR-only, NULs in the head)
    dev: int = 0              # the file's device and inode when found (0: not a file): the reader
    ino: int = 0              # checks that it read that file, whole (filechange)
    cluster: str | None = None  # --cluster NAME=PATH: the NAME whose PATH holds the file (else the id it states)
    clients: object | None = None   # else, a MirrorMaker 2 log: each client's cluster (core/mirror.Clients)

    @property
    def splittable(self) -> bool:
        return self.codec == "plain" and self.bundle is None and self.data is None and not self.normalised

    def open(self) -> Decoded:
        """The stream's log text (``decode.open_decoded``): never raises for damaged data,
        only when the input cannot be opened at all (OSError)."""
        if self.data is not None:
            return open_decoded(io.BytesIO(self.data), codec_of(self.data[:8]))
        if self.bundle is not None:
            assert self.path is not None and self.member is not None
            raw = bundles.open_member(self.path, bundles.decode_chain(self.member))
            return open_decoded(raw, self.codec, seekable=False)
        file = open(self.path, "rb")  # type: ignore[arg-type]
        stream = open_decoded(file, self.codec)
        stream.file = file
        return stream

    @property
    def planned(self) -> Identity | None:
        """The file as it was found (``filechange``), for a source read from a file of its own."""
        if not self.ino or self.bundle is not None or self.data is not None or self.path is None:
            return None
        return Identity(self.dev, self.ino, self.size)


def wrap_codec(raw: BinaryIO, codec: str) -> Decoded:
    """The log text of a raw stream (kept for callers holding bytes: the Spark executors)."""
    return open_decoded(raw, codec)


@dataclass
class Discovery:
    sources: list[Source] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def discover(inputs: list[str], host: str | None = None, follow_links: bool = True,
             exclude: list[str] | tuple = (), clusters: dict[str, str] | None = None) -> Discovery:
    """Find every log stream under the inputs (files, directories, '-', pipes, bundles).

    ``exclude``: files never read as input (the run's own outputs, when they sit among the inputs).
    ``clusters``: ``--cluster NAME=PATH`` as {PATH: NAME}; a source under PATH belongs to NAME.
    """
    found = Discovery()
    excluded = _identities(exclude)
    starts = []   # (input as given, index of its first source): to tell inputs' names apart
    for raw in inputs:
        starts.append((raw, len(found.sources)))
        if raw == "-":
            _add_stdin(host, found)
            continue
        path = Path(raw)
        try:
            info = path.stat()
        except OSError as exc:
            if path.is_symlink():
                found.skipped.append(Skipped(raw, "broken symbolic link", "link"))
            elif exc.errno == 2:
                found.skipped.append(Skipped(raw, "no such file or directory", "missing"))
            else:
                found.skipped.append(Skipped(raw, f"cannot read: {exc.strerror or exc}", "unreadable"))
            continue
        if stat.S_ISDIR(info.st_mode):
            for file in _walk(path, found, follow_links, excluded):
                _add_file(file, path, host, found)
        elif stat.S_ISREG(info.st_mode):
            if (info.st_dev, info.st_ino) in excluded:
                found.skipped.append(Skipped(raw, "the run's own output, not read as input", "output"))
                continue
            _add_file(path, path.parent, host, found)
        else:
            _add_special(raw, info, host, found)
    if host is None:
        separate_collisions(found.sources)
    _distinct_names(found.sources, starts)
    if clusters:
        _assign_clusters(found.sources, clusters)
    return found


def _distinct_names(sources: list[Source], starts: list[tuple[str, int]]) -> None:
    """Names relative to each input's root collide across inputs (``prod/server.log`` and
    ``staging/server.log`` are both ``server.log``): such names take the input as given in front,
    so evidence refs stay distinct. Names unique across inputs stay as they are."""
    if len(starts) < 2:
        return
    owner = []
    for number, (raw, first) in enumerate(starts):
        end = starts[number + 1][1] if number + 1 < len(starts) else len(sources)
        owner += [raw] * (end - first)
    inputs_of: dict[str, set[str]] = {}
    for source, raw in zip(sources, owner):
        inputs_of.setdefault(source.name, set()).add(raw)
    for source, raw in zip(sources, owner):
        if len(inputs_of[source.name]) > 1 and raw != "-":
            given = raw.rstrip("/") or "/"
            # A file given itself is named by its file name: its input as given is the whole name.
            source.name = given if Path(given).name == source.name else f"{given}/{source.name}"


def _assign_clusters(sources: list[Source], clusters: dict[str, str]) -> None:
    """The cluster of each source under a ``--cluster`` PATH (the deepest PATH wins)."""
    roots = sorted(((Path(path).resolve(), name) for path, name in clusters.items()),
                   key=lambda item: -len(item[0].parts))
    for source in sources:
        if source.path is None:
            continue
        where = Path(source.path).resolve()
        for root, name in roots:
            if where == root or root in where.parents:
                source.cluster = name
                break


def _identities(paths) -> set[tuple[int, int]]:
    found = set()
    for path in paths:
        try:
            info = os.stat(path)
        except (OSError, ValueError, TypeError):
            continue
        found.add((info.st_dev, info.st_ino))
    return found


def _walk(root: Path, found: Discovery, follow_links: bool, excluded: set) -> Iterator[Path]:
    """Every file below root, sorted, each directory once (symlink loops are cut); iterative,
    so however deep the tree, no recursion limit is reached."""
    seen: set[tuple[int, int]] = set()
    stack = [root]
    while stack:
        current = stack.pop()
        try:
            info = current.stat()
        except OSError as exc:
            found.skipped.append(Skipped(str(current), f"cannot read directory: {exc.strerror}", "unreadable"))
            continue
        key = (info.st_dev, info.st_ino)
        if key in seen:
            found.skipped.append(Skipped(str(current), "directory link loop, visited once", "link"))
            continue
        seen.add(key)
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError as exc:
            found.skipped.append(Skipped(str(current), f"cannot list directory: {exc.strerror}", "unreadable"))
            continue
        subdirs = []
        for entry in entries:
            if entry.name.startswith("."):
                continue
            relative = _relative(Path(entry.path), root)
            if entry.name.lower().endswith(NOT_LOGS):
                found.skipped.append(Skipped(relative, "not a log file (by its extension)", "not-log"))
                continue
            try:
                if entry.is_dir(follow_symlinks=follow_links):
                    subdirs.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=True):
                    if excluded:
                        info = entry.stat(follow_symlinks=True)
                        if (info.st_dev, info.st_ino) in excluded:
                            found.skipped.append(Skipped(relative, "the run's own output, not read as input",
                                                         "output"))
                            continue
                    yield Path(entry.path)
                elif entry.is_symlink():
                    found.skipped.append(Skipped(entry.path, "broken symbolic link", "link"))
                else:
                    found.skipped.append(Skipped(relative, "not a regular file (a pipe, socket or device "
                                                           "inside a directory), not read", "refused"))
            except OSError as exc:
                found.skipped.append(Skipped(entry.path, f"cannot stat: {exc.strerror}", "unreadable"))
        stack.extend(reversed(subdirs))


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def infer_host(relative: str, root: Path) -> str:
    """The host a path names (``hosts.infer_host``), a repeated bundle member's ``#2`` aside."""
    return _infer_host(_DUPLICATE.sub("", relative), root)


def _add_file(path: Path, root: Path, host: str | None, found: Discovery, name: str | None = None) -> None:
    relative = name or (_relative(path, root) if path != root else path.name)
    size = dev = ino = 0
    try:
        info = path.stat()
        size, dev, ino = info.st_size, info.st_dev, info.st_ino   # known for a file this user may not read (mode 000)
        with open(path, "rb") as raw:
            first = raw.read(HEAD_BYTES)
    except OSError as exc:
        found.skipped.append(Skipped(relative, f"cannot read: {exc.strerror or exc}", "unreadable", size))
        return
    codec = codec_of(first)
    if codec == "zstd" and not zstd_available():
        found.skipped.append(Skipped(relative, "zstd-compressed but the zstandard package is not "
                                               "installed (pip install 'rebalance-doctor[zstd]')", "unreadable", size))
        return
    head = first if codec == "plain" else _decompressed_head(path, codec)
    kind = bundles.archive_kind(head, path.name)
    if kind is not None:
        _add_bundle(str(path), relative, root, host, kind, "plain" if kind == "zip" else codec, found, size)
        return
    found.sources.append(Source(name=relative, host=host or infer_host(relative, root), size=size,
                                path=str(path), codec=codec, dev=dev, ino=ino,
                                normalised=codec == "plain" and not text_form(first).plain))


def _decompressed_head(path: Path, codec: str) -> bytes:
    with decompressed(open(path, "rb"), codec, seekable=False) as stream:
        return stream.read(4096)


def _add_bundle(path: str, display: str, root: Path, host: str | None, kind: str, outer: str,
                found: Discovery, size: int) -> None:
    members = 0
    for item in bundles.list_members(path, display, kind, outer):
        if isinstance(item, bundles.Problem):
            found.skipped.append(Skipped(item.name, item.reason, item.kind, item.size))
            continue
        members += 1
        if item.codec == "zstd" and not zstd_available():
            found.skipped.append(Skipped(item.name, "zstd-compressed but the zstandard package is not "
                                                    "installed (pip install 'rebalance-doctor[zstd]')",
                                         "unreadable", item.size))
            continue
        found.sources.append(Source(
            name=item.name, host=host or infer_host(item.name, root), size=item.size, path=path,
            codec=item.codec, bundle=item.steps[0].kind, member=bundles.encode_chain(item.steps)))
    if not members and not any(s.source.startswith(display) for s in found.skipped):
        found.skipped.append(Skipped(display, f"an empty {kind} archive", "empty", size))


# ---------------------------------------------------------------- stdin, pipes, devices

_SPOOL_DIR: str | None = None


def _spool_dir() -> str:
    global _SPOOL_DIR
    if _SPOOL_DIR is None:
        _SPOOL_DIR = tempfile.mkdtemp(prefix="rebalance-doctor-input-")
        owner = os.getpid()
        atexit.register(lambda: os.getpid() == owner and shutil.rmtree(_SPOOL_DIR or "", ignore_errors=True))
    return _SPOOL_DIR


def _spool(stream: BinaryIO, name: str, found: Discovery) -> str | None:
    """Copy a stream that can be read only once (stdin, a pipe) to a private temporary file."""
    try:
        fd, path = tempfile.mkstemp(dir=_spool_dir(), prefix="stream-")
        with os.fdopen(fd, "wb") as out:
            shutil.copyfileobj(stream, out, 1 << 20)
    except OSError as exc:
        found.skipped.append(Skipped(name, f"cannot keep what was read in a temporary file in "
                                           f"{tempfile.gettempdir()} ({exc.strerror or exc}); set TMPDIR",
                                     "unreadable"))
        return None
    return path


def _add_stdin(host: str | None, found: Discovery) -> None:
    stdin = sys.stdin
    if stdin is None or stdin.closed:
        found.skipped.append(Skipped(STDIN, "standard input is closed", "refused"))
        return
    path = _spool(stdin.buffer, STDIN, found)
    if path is not None:
        _add_spooled(path, STDIN, host, host or "stdin", found)


def _add_spooled(path: str, name: str, forced_host: str | None, own_host: str, found: Discovery) -> None:
    """A spooled stream, under the name it was given (its members under their own hosts)."""
    before = len(found.sources)
    _add_file(Path(path), Path("/"), forced_host, found, name=name)
    for source in found.sources[before:]:
        if source.bundle is None:
            source.host = own_host


def _add_special(raw: str, info: os.stat_result, host: str | None, found: Discovery) -> None:
    """A path that is neither a file nor a directory: a pipe or FIFO is read once; devices and
    sockets are refused."""
    if not stat.S_ISFIFO(info.st_mode):
        what = ("a character device" if stat.S_ISCHR(info.st_mode) else
                "a block device" if stat.S_ISBLK(info.st_mode) else
                "a socket" if stat.S_ISSOCK(info.st_mode) else "not a regular file")
        found.skipped.append(Skipped(raw, f"{what}, not a log file: refused", "refused"))
        return
    try:
        fd = os.open(raw, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        found.skipped.append(Skipped(raw, f"cannot open the pipe: {exc.strerror or exc}", "unreadable"))
        return
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLHUP)
        if not poller.poll(int(FIFO_WAIT_SECONDS * 1000)):
            os.close(fd)
            found.skipped.append(Skipped(raw, f"a pipe nobody wrote to within {FIFO_WAIT_SECONDS:g} s: refused "
                                              f"(start the writer first)", "refused"))
            return
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", buffering=0) as stream:
            path = _spool(stream, raw, found)  # type: ignore[arg-type]
    except OSError as exc:
        found.skipped.append(Skipped(raw, f"cannot read the pipe: {exc.strerror or exc}", "unreadable"))
        return
    if path is not None:
        name = Path(raw).name
        _add_spooled(path, name, host, host or infer_host(name, Path(raw).parent), found)


__all__ = ["BZIP2_MAGIC", "Discovery", "GZIP_MAGIC", "LOST_KINDS", "NOT_LOGS", "SKIP_KINDS", "STDIN", "Skipped",
           "Source", "USAGE_KINDS", "XZ_MAGIC", "ZIP_MAGIC", "ZSTD_MAGIC", "codec_of", "discover", "infer_host",
           "wrap_codec", "zstd_available"]
