"""Input discovery: files, directories, rotated and compressed logs, zip/tar bundles, stdin.

A ``Source`` is one readable log stream. Nothing is unpacked to disk: compressed files and
bundle members are decompressed as streams. Everything that cannot be read becomes a
``Skipped`` entry with a reason, never an exception.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import re
import sys
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Iterator

from .hosts import infer_host, separate_collisions

GZIP_MAGIC = b"\x1f\x8b"
BZIP2_MAGIC = b"BZh"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
XZ_MAGIC = b"\xfd7zXZ\x00"
ZIP_MAGIC = b"PK\x03\x04"

# Files that sit beside logs in incident bundles and fixture trees but are not logs.
NOT_LOGS = (".py", ".pyc", ".toml", ".md", ".rst", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".pdf",
            ".parquet", ".jar", ".class", ".so", ".exe")


@dataclass
class Skipped:
    source: str
    reason: str


@dataclass
class Source:
    """One log stream, described by plain data so that worker processes can reopen it."""

    name: str                 # relative display path (bundle members: bundle!member)
    host: str
    size: int                 # bytes on disk (compressed size for compressed inputs)
    path: str | None = None   # filesystem path of the file, or of the bundle holding it
    codec: str = "plain"      # plain, gzip, bz2, zstd, xz (of the file or of the member)
    bundle: str | None = None  # "zip" or "tar" when the stream is a bundle member
    member: str | None = None
    data: bytes | None = None  # standard input, read once

    @property
    def splittable(self) -> bool:
        return self.codec == "plain" and self.bundle is None and self.data is None

    def open(self) -> BinaryIO:
        if self.data is not None:
            return io.BytesIO(self.data)
        if self.bundle == "zip":
            raw: BinaryIO = zipfile.ZipFile(self.path).open(self.member)  # type: ignore[arg-type]
        elif self.bundle == "tar":
            archive = tarfile.open(self.path, mode="r:*")
            extracted = archive.extractfile(self.member)  # type: ignore[arg-type]
            if extracted is None:
                raise OSError(f"{self.member} is not a regular file")
            raw = extracted  # type: ignore[assignment]
        else:
            raw = open(self.path, "rb")  # type: ignore[arg-type]
        return wrap_codec(raw, self.codec)


@dataclass
class Discovery:
    sources: list[Source] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def discover(inputs: list[str], host: str | None = None, follow_links: bool = True) -> Discovery:
    """Find every log stream under the inputs (files, directories, '-', bundles)."""
    found = Discovery()
    for raw in inputs:
        if raw == "-":
            data = sys.stdin.buffer.read()
            codec = codec_of(data[:8])
            found.sources.append(Source("<stdin>", host or "stdin", len(data), codec=codec, data=data))
            continue
        path = Path(raw)
        if not path.exists():
            found.skipped.append(Skipped(raw, "no such file or directory"))
            continue
        if path.is_dir():
            root = path
            for file in _walk(path, found, follow_links):
                _add_file(file, root, host, found)
        else:
            _add_file(path, path.parent, host, found)
    if host is None:
        separate_collisions(found.sources)
    return found


def _walk(root: Path, found: Discovery, follow_links: bool) -> Iterator[Path]:
    """Every file below root, sorted, each directory once (symlink loops are cut)."""
    seen: set[tuple[int, int]] = set()
    stack = [root]
    while stack:
        current = stack.pop()
        try:
            stat = current.stat()
        except OSError as exc:
            found.skipped.append(Skipped(str(current), f"cannot read directory: {exc.strerror}"))
            continue
        key = (stat.st_dev, stat.st_ino)
        if key in seen:
            found.skipped.append(Skipped(str(current), "directory link loop, visited once"))
            continue
        seen.add(key)
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError as exc:
            found.skipped.append(Skipped(str(current), f"cannot list directory: {exc.strerror}"))
            continue
        subdirs = []
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.name.lower().endswith(NOT_LOGS):
                found.skipped.append(Skipped(_relative(Path(entry.path), root), "not a log file (by its extension)"))
                continue
            try:
                if entry.is_dir(follow_symlinks=follow_links):
                    subdirs.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=True):
                    yield Path(entry.path)
                elif entry.is_symlink():
                    found.skipped.append(Skipped(entry.path, "broken symbolic link"))
            except OSError as exc:
                found.skipped.append(Skipped(entry.path, f"cannot stat: {exc.strerror}"))
        stack.extend(reversed(subdirs))


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def _sniff(path: Path) -> bytes:
    with open(path, "rb") as handle:
        return handle.read(512)


def codec_of(head: bytes) -> str:
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(BZIP2_MAGIC):
        return "bz2"
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    if head.startswith(XZ_MAGIC):
        return "xz"
    return "plain"


def wrap_codec(raw: BinaryIO, codec: str) -> BinaryIO:
    if codec == "gzip":
        return KeepWhatWasRead(gzip.GzipFile(fileobj=raw, mode="rb"))  # type: ignore[return-value]
    if codec == "bz2":
        return KeepWhatWasRead(bz2.BZ2File(raw, mode="rb"))  # type: ignore[return-value]
    if codec == "xz":
        return KeepWhatWasRead(lzma.LZMAFile(raw, mode="rb"))  # type: ignore[return-value]
    if codec == "zstd":
        import zstandard  # optional: only needed for .zst inputs

        return KeepWhatWasRead(zstandard.ZstdDecompressor().stream_reader(raw))  # type: ignore[return-value]
    return raw


class KeepWhatWasRead:
    """A decompressing stream whose read() returns the data decoded before a failure.

    A plain ``GzipFile.read(16 MiB)`` on a truncated file raises and drops everything it had
    decoded in that call; here the bytes come back first and the error is raised by the next
    read, so the lines before the damage still become events.
    """

    PIECE = 1 << 20

    def __init__(self, stream):
        self._stream = stream
        self._error: BaseException | None = None

    def read(self, size: int = -1) -> bytes:
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        pieces: list[bytes] = []
        wanted = size if size >= 0 else float("inf")
        got = 0
        while got < wanted:
            try:
                piece = self._stream.read1(int(min(self.PIECE, wanted - got)))
            except (EOFError, OSError, ValueError) as exc:
                if not pieces:
                    raise
                self._error = exc
                break
            if not piece:
                break
            pieces.append(piece)
            got += len(piece)
        return b"".join(pieces)

    def close(self) -> None:
        self._stream.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def zstd_available() -> bool:
    try:
        import zstandard  # noqa: F401
    except ImportError:
        return False
    return True


def _add_file(path: Path, root: Path, host: str | None, found: Discovery) -> None:
    relative = _relative(path, root) if path != root else path.name
    try:
        head = _sniff(path)
        size = path.stat().st_size
    except OSError as exc:
        found.skipped.append(Skipped(relative, f"cannot read: {exc.strerror or exc}"))
        return
    if head.startswith(ZIP_MAGIC):
        _add_zip(path, relative, root, host, found)
        return
    codec = codec_of(head)
    if codec == "zstd" and not zstd_available():
        found.skipped.append(Skipped(relative, "zstd-compressed but the zstandard package is not "
                                               "installed (pip install 'rebalance-doctor[zstd]')"))
        return
    if _is_tar(path, head, codec):
        _add_tar(path, relative, root, host, codec, found)
        return
    found.sources.append(Source(name=relative, host=host or infer_host(relative, root), size=size,
                                path=str(path), codec=codec))


def _is_tar(path: Path, head: bytes, codec: str) -> bool:
    name = path.name.lower()
    if name.endswith((".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar.zst")):
        return True
    if codec == "plain":
        return len(head) > 262 and head[257:262] == b"ustar"
    return False


def _add_zip(path: Path, relative: str, root: Path, host: str | None, found: Discovery) -> None:
    try:
        archive = zipfile.ZipFile(path)
        members = [m for m in archive.infolist() if not m.is_dir()]
    except (zipfile.BadZipFile, OSError) as exc:
        found.skipped.append(Skipped(relative, f"unreadable zip bundle: {exc}"))
        return
    for member in members:
        name = f"{relative}!{member.filename}"
        try:
            with archive.open(member) as handle:
                head = handle.read(512)
        except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError) as exc:
            found.skipped.append(Skipped(name, f"unreadable zip member: {exc}"))
            continue
        found.sources.append(Source(
            name=name, host=host or infer_host(name, root), size=member.compress_size,
            path=str(path), codec=codec_of(head), bundle="zip", member=member.filename))


def _add_tar(path: Path, relative: str, root: Path, host: str | None, codec: str,
             found: Discovery) -> None:
    try:
        with tarfile.open(path, mode="r:*") as archive:
            members = [m for m in archive.getmembers() if m.isfile()]
    except (tarfile.TarError, OSError, EOFError) as exc:
        found.skipped.append(Skipped(relative, f"unreadable tar bundle: {exc}"))
        return
    for member in members:
        name = f"{relative}!{member.name}"
        try:
            with tarfile.open(path, mode="r:*") as archive:
                extracted = archive.extractfile(member.name)
                head = extracted.read(8) if extracted else b""
        except (tarfile.TarError, OSError, EOFError) as exc:
            found.skipped.append(Skipped(name, f"unreadable tar member: {exc}"))
            continue
        found.sources.append(Source(
            name=name, host=host or infer_host(name, root), size=member.size, path=str(path),
            codec=codec_of(head), bundle="tar", member=member.name))
