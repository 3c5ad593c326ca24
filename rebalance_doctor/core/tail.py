"""Follow files, directories and streams as they grow (``analyze --follow``): the bytes, not their meaning.

A followed path is read from its start, then polled: new bytes of the file it holds open are
handed on. Whether the file changed under it is ``filechange.compare``'s answer (the check the
reader makes at the end of a file's read):

- it shrank (logrotate's ``copytruncate``): read again from the start, as a new piece of text;
- the path names another file (a rename rotation, a delete and create): the old file is read to
  its end, then the new one from its start;
- the path names nothing (deleted, rotated away and not yet recreated): a note, and the path is
  watched until a file appears there again.

A followed directory is listed on every poll: a file that appears in it is followed from its
start, unless it is a rotated form of a followed file (``server.log.1``, ``server.log.2024-05-01``,
``.gz``): that holds lines already read (renamed or copied away by the rotation). Files with
such names, compressed files and bundles found at the start are read once and not followed.

A stream (standard input, a FIFO) is read without blocking until it closes.

Each change of the text followed at a path starts a new *generation*: its lines are numbered
from 1 again, and it is named ``NAME#2``, ``NAME#3`` ... (the same convention as a repeated
bundle member) so that evidence ``server.log#2:14`` points at one line.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import filechange
from .hosts import separate_collisions
from .sources import Discovery, Source, _walk, discover, infer_host

# Read at most this much of one file per poll, so that a burst in one file does not hold up the others.
POLL_BYTES = 16 << 20
READ_BYTES = 1 << 20
# The last bytes read of a file, compared with what is there on the next poll: a file cut and
# written again past the offset read between two polls is told from one that grew.
TAIL_CHECK_BYTES = 64
# A rotated or archived form of a log's name: numbered, dated, compressed.
ROTATED = re.compile(r"\.(?:\d+|\d{4}-\d\d-\d\d(?:[-_.T]?\d\d){0,3})(?:\.(?:gz|bz2|xz|zst|zstd))?$"
                     r"|\.(?:gz|bz2|xz|zst|zstd|zip|tgz|tar)$", re.IGNORECASE)


@dataclass
class Piece:
    """What a poll found: ``data`` appended to the text ``key`` (a new key: a new text, whose
    ``source`` describes it), or ``ended``: that text will not grow again."""

    key: tuple
    source: Source
    data: bytes = b""
    ended: bool = False


def rotated_name(name: str) -> bool:
    return ROTATED.search(name) is not None


class FileTail:
    """One followed file path: the file it names, read as it grows, across rotations."""

    def __init__(self, source: Source, seen: set):
        self.path = source.path or ""
        self.base = source
        self.seen = seen            # (dev, ino) of every file read so far, across tails
        self.generation = 0
        self.file = None
        self.identity: filechange.Identity | None = None
        self.offset = 0
        self.source = source
        self.gone = False           # the path names nothing: said once
        self.more = False           # the last poll stopped at POLL_BYTES: more is waiting
        self.last = b""             # the last bytes read (TAIL_CHECK_BYTES)
        self._open(first=True)

    def _open(self, first: bool = False) -> bool:
        try:
            file = open(self.path, "rb")
            info = os.fstat(file.fileno())
        except OSError:
            return False
        if not stat.S_ISREG(info.st_mode):
            file.close()
            return False
        self.file = file
        self.last = b""
        self.identity = filechange.Identity.of(info)
        self.seen.add((info.st_dev, info.st_ino))
        self.offset = 0
        self.generation += 1
        name = self.base.name if self.generation == 1 else f"{self.base.name}#{self.generation}"
        self.source = Source(name=name, host=self.base.host, size=info.st_size, path=self.path,
                             dev=info.st_dev, ino=info.st_ino, cluster=self.base.cluster)
        return True

    @property
    def key(self) -> tuple:
        return (self.path, self.generation)

    def poll(self, notes: list[str]) -> list[Piece]:
        pieces: list[Piece] = []
        if self.file is None:
            if filechange.identity(self.path) is not None and self._open():
                notes.append(f"{self.base.name}: a file is at the path again; following it from its start "
                             f"as {self.source.name}")
                self.gone = False
            else:
                return pieces
        assert self.identity is not None
        try:
            held = filechange.Identity.of(os.fstat(self.file.fileno()))
        except OSError:
            held = None
        rewritten = held is not None and held.size >= self.offset and not self._still_there()
        if held is not None and (held.size < self.offset or rewritten):
            # Cut short in place (copytruncate): what it holds now was written after the cut. Cut and
            # written past the offset read between two polls, the bytes before the offset changed.
            notes.append(f"{self.source.name}: cut short from {self.offset:,} bytes "
                         + ("and written again past that" if rewritten else f"to {held.size:,}")
                         + " (copytruncate?); following it from its start")
            pieces.append(Piece(self.key, self.source, ended=True))
            self.generation += 1
            self.source = Source(name=f"{self.base.name}#{self.generation}", host=self.base.host, size=held.size,
                                 path=self.path, dev=held.dev, ino=held.ino, cluster=self.base.cluster)
            self.offset = 0
            self.last = b""
            self.file.seek(0)
        pieces += self._read()
        now = filechange.identity(self.path)
        change = filechange.compare(self.identity, now)
        if change == filechange.REMOVED:
            if not self.gone:
                notes.append(f"{self.source.name}: removed (deleted or rotated away); what it held was read; "
                             f"waiting for a file at its path")
                self.gone = True
            return pieces
        if change == filechange.REPLACED:
            # Renamed away and a new file created: the old one was read to its end just now.
            pieces.append(Piece(self.key, self.source, ended=True))
            self.file.close()
            self.file = None
            old = self.source.name
            if now is not None and (now.dev, now.ino) in self.seen:
                notes.append(f"{old}: the path now names a file already read; not read again")
                return pieces
            if self._open():
                notes.append(f"{old}: replaced by a new file (rotation?); following it from its start "
                             f"as {self.source.name}")
                self.gone = False
                pieces += self._read()
        return pieces

    def _still_there(self) -> bool:
        """Whether the last bytes read are still where they were read (not a file cut and rewritten)."""
        if not self.last:
            return True
        try:
            return os.pread(self.file.fileno(), len(self.last), self.offset - len(self.last)) == self.last
        except OSError:
            return True

    def _read(self) -> list[Piece]:
        chunks = []
        got = 0
        while got < POLL_BYTES:
            try:
                data = self.file.read(READ_BYTES)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
            got += len(data)
        if not chunks:
            return []
        self.offset += got
        self.more = got >= POLL_BYTES
        data = b"".join(chunks)
        self.last = (self.last + data)[-TAIL_CHECK_BYTES:]
        return [Piece(self.key, self.source, data)]

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None


class StreamTail:
    """Standard input or a FIFO: read without blocking until the writer closes it."""

    def __init__(self, fd: int, source: Source):
        self.fd = fd
        self.source = source
        self.key = ("<stream>", source.name)
        self.closed = False
        self.more = False
        self.was_blocking = os.get_blocking(fd)
        os.set_blocking(fd, False)

    def poll(self, notes: list[str]) -> list[Piece]:
        if self.closed:
            return []
        chunks = []
        got = 0
        while got < POLL_BYTES:
            try:
                data = os.read(self.fd, READ_BYTES)
            except BlockingIOError:
                break
            except OSError as exc:
                notes.append(f"{self.source.name}: cannot be read any more ({exc.strerror or exc}); "
                             f"what came before is kept")
                data = b""
            if not data:
                self.closed = True
                notes.append(f"{self.source.name}: the stream was closed by its writer; what it gave is kept, "
                             f"the other inputs are still followed")
                break
            chunks.append(data)
            got += len(data)
        self.more = got >= POLL_BYTES
        pieces = [Piece(self.key, self.source, b"".join(chunks))] if chunks else []
        if self.closed:
            pieces.append(Piece(self.key, self.source, ended=True))
        return pieces

    def close(self) -> None:
        # A terminal's standard input shared with the shell must not stay non-blocking after us.
        try:
            os.set_blocking(self.fd, self.was_blocking)
        except OSError:
            pass


@dataclass
class Plan:
    """What ``--follow`` does with its inputs: the tails, what is read once, what was refused."""

    tails: list = field(default_factory=list)
    once: list[Source] = field(default_factory=list)     # read whole at the start, not followed
    skipped: Discovery = field(default_factory=Discovery)
    directories: list[Path] = field(default_factory=list)


class Follower:
    """Every followed input; ``poll`` returns the pieces of text that appeared since the last one."""

    def __init__(self, inputs: list[str], host: str | None = None, exclude: list[str] | tuple = (),
                 clusters: dict[str, str] | None = None):
        self.clusters = dict(clusters or {})   # --cluster NAME=PATH as {PATH: NAME}
        self.seen: set[tuple[int, int]] = set()
        self.known: set[str] = set()      # paths considered (followed, read once, or left out)
        self.host = host
        self.exclude = exclude
        self.plan = Plan()
        self.notes: list[str] = []
        for raw in inputs:
            if raw == "-":
                self._stream(0, "<stdin>", host or "stdin")
                continue
            try:
                info = os.stat(raw)
            except OSError:
                info = None
            if info is not None and stat.S_ISFIFO(info.st_mode):
                try:
                    fd = os.open(raw, os.O_RDONLY | os.O_NONBLOCK)
                except OSError as exc:
                    self.plan.skipped.skipped.append(_skipped(raw, f"cannot open the pipe: {exc.strerror}"))
                    continue
                name = Path(raw).name
                self._stream(fd, name, host or infer_host(name, Path(raw).parent))
                continue
            if info is not None and stat.S_ISDIR(info.st_mode):
                self.plan.directories.append(Path(raw))
            found = discover([raw], host=host, exclude=exclude, clusters=self.clusters)
            self.plan.skipped.skipped.extend(found.skipped)
            for source in found.sources:
                self._add(source)

    @property
    def followable(self) -> bool:
        """Whether anything can grow: a followed file or stream, or a followed directory."""
        return bool(self.plan.tails or self.plan.directories)

    def _stream(self, fd: int, name: str, host: str) -> None:
        self.plan.tails.append(StreamTail(fd, Source(name=name, host=host, size=0)))

    def _add(self, source: Source, later: bool = False) -> None:
        if source.path:
            self.known.add(os.path.abspath(source.path) if source.bundle is None else source.path)
        plain_file = (source.codec == "plain" and source.bundle is None and source.data is None
                      and not source.normalised and source.path is not None)
        if plain_file and not rotated_name(source.name):
            self.plan.tails.append(FileTail(source, self.seen))
        elif not later:
            self.plan.once.append(source)
            if source.ino:
                self.seen.add((source.dev, source.ino))

    @property
    def behind(self) -> bool:
        """Whether a tail has more to read than one poll takes (a big file at the start, a burst)."""
        return any(tail.more for tail in self.plan.tails)

    def poll(self) -> list[Piece]:
        pieces: list[Piece] = []
        for tail in self.plan.tails:
            tail.more = False
            pieces += tail.poll(self.notes)
        for directory in self.plan.directories:
            pieces += self._new_files(directory)
        return pieces

    def _new_files(self, root: Path) -> list[Piece]:
        listing = Discovery()
        new = [p for p in _walk(root, listing, True, set()) if os.path.abspath(p) not in self.known]
        pieces: list[Piece] = []
        arrived: list[Source] = []
        for path in new:
            absolute = os.path.abspath(path)
            self.known.add(absolute)
            relative = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
            identity = filechange.identity(absolute)
            if identity is not None and (identity.dev, identity.ino) in self.seen:
                self.notes.append(f"{relative}: appeared, a file already read (renamed by a rotation); not read again")
                continue
            if rotated_name(path.name):
                self.notes.append(f"{relative}: appeared, a rotated form of a followed log (lines already read); "
                                  f"not read")
                continue
            found = discover([str(path)], host=self.host, exclude=self.exclude, clusters=self.clusters)
            for source in found.sources:
                source.name = relative
                source.host = self.host or infer_host(relative, root)
                arrived.append(source)
        if arrived and self.host is None:
            # Files named alike in several directories (tracking-3/tracking.log, tracking-4/...) take
            # their directories' names, as discovery names them; the hosts of files already read stay.
            known = [replace(t.base) for t in self.plan.tails if isinstance(t, FileTail)]
            separate_collisions(known + [replace(s) for s in self.plan.once] + arrived)
        for source in arrived:
            before = len(self.plan.tails)
            self._add(source, later=True)
            if len(self.plan.tails) > before:
                self.notes.append(f"{source.name}: a new file; following it from its start")
                pieces += self.plan.tails[-1].poll(self.notes)
            else:
                self.notes.append(f"{source.name}: a new file that is not plain text (compressed, a bundle); "
                                  f"not followed")
        return pieces

    def take_notes(self) -> list[str]:
        notes, self.notes = self.notes, []
        return notes

    def close(self) -> None:
        for tail in self.plan.tails:
            tail.close()


def _skipped(source: str, reason: str):
    from .sources import Skipped

    return Skipped(source, reason, "unreadable")


__all__ = ["FileTail", "Follower", "Piece", "StreamTail", "rotated_name"]
