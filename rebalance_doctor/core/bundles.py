"""Incident bundles: the members of zip and tar archives, nested ones too, read without unpacking.

A member is reached from the file on disk through a **chain** of steps, one per archive level
(``support-case.zip`` -> ``case/node-0.tar.gz`` -> ``broker-0/server.log``). Each step names the
archive kind, the member's ordinal in its archive and its full path there: two members with the
same path (``tar -r`` appends) stay two. Archives inside archives are opened up to
``MAX_DEPTH`` levels.

Work stays linear in the number of members:

* a zip's central directory is read once per process (``_zip``) and every member is opened from it;
* a tar (any compression) can only be read from its start, so each process keeps a **cursor**
  per tar stream that moves forward: members asked for in archive order (as discovery lists
  them and the engines read them) cost one pass over the archive. The first bytes of the
  member under the cursor are kept, so the member whose head was just sampled (layout
  detection) can be opened again without starting over.

A truncated tar keeps the members before the damage (the one it cuts ends early and says so); a
member that cannot be read ends its own stream with the reason, never the run.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import zipfile
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import BinaryIO, Iterator

from .decode import Damage, Decoded, codec_of, decompressed

MAX_DEPTH = 3               # archives inside archives inside archives, no deeper
NESTED_ZIP_BYTES = 256 << 20  # a zip inside an archive is read into memory (it needs seeking)
REPLAY_BYTES = 1 << 20      # first bytes of the cursor's current member kept for a second open
_OPEN_ARCHIVES = 8          # per process
ZIP_MAGIC = b"PK\x03\x04"
EMPTY_ZIP_MAGIC = b"PK\x05\x06"


@dataclass(frozen=True)
class Step:
    kind: str       # "zip" or "tar"
    index: int      # ordinal of the member in its archive (zip: in the central directory)
    name: str       # the member's full path in the archive
    outer: str      # codec of the stream holding the archive ("plain" for a zip)


def encode_chain(steps: list[Step]) -> str:
    return json.dumps([[s.kind, s.index, s.name, s.outer] for s in steps], ensure_ascii=False)


def decode_chain(text: str) -> list[Step]:
    return [Step(*step) for step in json.loads(text)]


def is_tar_head(head: bytes) -> bool:
    return len(head) > 262 and head[257:262] == b"ustar"


def archive_kind(head: bytes, name: str) -> str | None:
    """'zip' or 'tar' when a decompressed stream's head says it is an archive (a tar without
    the ustar magic, as old tars are, by its name and the NULs of its header)."""
    if head.startswith((ZIP_MAGIC, EMPTY_ZIP_MAGIC)):
        return "zip"
    if is_tar_head(head) or (_tar_by_name(name) and b"\x00" in head[:512]):
        return "tar"
    return None


def _tar_by_name(name: str) -> bool:
    return name.lower().endswith((".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz",
                                  ".tar.zst"))


# ---------------------------------------------------------------- opening a member

def open_member(path: str, steps: list[Step]) -> BinaryIO:
    """The raw (still compressed, if the member is) bytes of the member a chain leads to."""
    holder_key: tuple = (path,)
    opener = _file_opener(path)
    for depth, step in enumerate(steps):
        holder_key += (step.kind, step.index)
        if step.kind == "zip":
            archive = _zip(holder_key[:-2], opener, step.outer)
            raw: BinaryIO = ZipMember(archive, step.index)
        else:
            cursor = _cursor(holder_key[:-2], opener, step.outer)
            raw = cursor.open(step.index)
        if depth == len(steps) - 1:
            return raw
        opener = _member_opener(path, steps[: depth + 1])
    return open(path, "rb")


def _file_opener(path: str):
    return lambda: open(path, "rb")


def _member_opener(path: str, steps: list[Step]):
    return lambda: open_member(path, steps)


class ZipMember(io.RawIOBase):
    """A zip member's bytes. zipfile's own CRC check raises on the last read and drops that
    read's data, so the CRC is checked here instead and a mismatch is damage, not an error."""

    def __init__(self, archive: zipfile.ZipFile, index: int):
        super().__init__()
        self.info = archive.infolist()[index]
        self._stream = archive.open(self.info)
        self._stream._expected_crc = None  # type: ignore[attr-defined]  # checked below instead
        self._crc = 0
        self.damage: list[Damage] = []

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(size)
        self._crc = zlib.crc32(data, self._crc)
        if (not data or size < 0) and self._crc != self.info.CRC and not self.damage:
            self.damage.append(Damage("corrupt", f"zip member {self.info.filename} fails its CRC "
                                                 f"(its data was read; some of it may be wrong)", 0, ended=False))
        return data

    def readinto(self, buffer) -> int:  # pragma: no cover - read() is what the decoders call
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._stream.close()
        super().close()


restarts = 0  # tar streams read from their start, in this process (a work counter for tests)
_ZIPS: "OrderedDict[tuple, zipfile.ZipFile]" = OrderedDict()
_CURSORS: "OrderedDict[tuple, TarCursor]" = OrderedDict()


def _forget_after_fork() -> None:
    # A forked worker shares the parent's open files (and their offsets): it opens its own.
    _ZIPS.clear()
    _CURSORS.clear()


os.register_at_fork(after_in_child=_forget_after_fork)


def _zip(key: tuple, opener, outer: str = "plain") -> zipfile.ZipFile:
    archive = _ZIPS.get(key)
    if archive is None:
        raw = opener()
        if outer != "plain":
            raw = decompressed(raw, outer)
        if outer != "plain" or not _seekable(raw):  # a zip inside an archive: it needs seeking
            # A raw stream may return less than asked (a tar member read again first gives back the
            # bytes its listing kept): read to its end.
            chunks, held = [], 0
            while held <= NESTED_ZIP_BYTES:
                chunk = raw.read(NESTED_ZIP_BYTES + 1 - held)
                if not chunk:
                    break
                chunks.append(chunk)
                held += len(chunk)
            data = b"".join(chunks)
            raw.close()
            if len(data) > NESTED_ZIP_BYTES:
                raise OSError(f"a zip inside an archive larger than {NESTED_ZIP_BYTES >> 20} MiB: unpack it first")
            raw = io.BytesIO(data)
        archive = zipfile.ZipFile(raw)
        _remember(_ZIPS, key, archive)
    else:
        _ZIPS.move_to_end(key)
    return archive


def _seekable(raw) -> bool:
    try:
        return bool(raw.seekable())
    except (AttributeError, OSError, ValueError):
        return False


def _remember(cache: OrderedDict, key, value) -> None:
    cache[key] = value
    while len(cache) > _OPEN_ARCHIVES:
        _, old = cache.popitem(last=False)
        try:
            old.close()
        except Exception:
            pass


def _cursor(key: tuple, opener, outer: str) -> "TarCursor":
    cursor = _CURSORS.get(key)
    if cursor is None:
        cursor = TarCursor(opener, outer)
        _remember(_CURSORS, key, cursor)
    else:
        _CURSORS.move_to_end(key)
    return cursor


class TarCursor:
    """A tar stream read forward, member by member (``tarfile``'s stream mode)."""

    def __init__(self, opener, outer: str):
        self._opener = opener
        self._outer = outer
        self._archive: tarfile.TarFile | None = None
        self._stream: Decoded | None = None
        self._index = -1                      # ordinal of the last header read
        self._member: "_TarMember | None" = None

    def _restart(self) -> None:
        global restarts
        restarts += 1
        self.close()
        self._stream = decompressed(self._opener(), self._outer, seekable=False)
        self._archive = tarfile.open(fileobj=self._stream, mode="r|")  # type: ignore[arg-type]
        self._index = -1

    def members(self) -> Iterator[tuple[int, tarfile.TarInfo | None, Damage | None]]:
        """(ordinal, header, None) for each header from the start; (ordinal, None, damage) when
        the archive cannot be read further."""
        self._restart()
        while True:
            info, damage = self._next()
            if info is None:
                if damage is not None:
                    yield self._index + 1, None, damage
                return
            yield self._index, info, None

    def _next(self) -> tuple[tarfile.TarInfo | None, Damage | None]:
        assert self._archive is not None
        try:
            info = self._archive.next()
        except Exception as exc:  # tarfile.ReadError, EOFError, OSError from a damaged stream
            return None, self._damage(exc)
        if info is None:
            damaged = self._stream.damages() if self._stream else []
            return None, (damaged[-1] if damaged else None)
        self._index += 1
        self._member = None
        return info, None

    def _damage(self, exc: BaseException) -> Damage:
        below = self._stream.damages() if self._stream else []
        if below:
            return below[-1]
        return Damage("truncated" if "end" in str(exc) else "corrupt", f"tar archive damaged ({exc})")

    def open(self, index: int) -> BinaryIO:
        """The bytes of member ``index``; reading members in order costs one pass in all."""
        if self._member is not None and self._index == index and self._member.replayable():
            return self._member.again()
        if self._archive is None or index <= self._index:
            self._restart()
        while self._index < index:
            info, damage = self._next()
            if info is None:
                raise OSError(damage.message if damage else "the archive ends before this member")
        assert self._archive is not None
        extracted = self._archive.extractfile(info)  # type: ignore[possibly-undefined]
        if extracted is None:
            raise OSError(f"{info.name} is not a regular file")  # type: ignore[possibly-undefined]
        self._member = _TarMember(extracted, self)
        return self._member.again()

    def close(self) -> None:
        if self._archive is not None:
            try:
                self._archive.close()
            except Exception:
                pass
        if self._stream is not None:
            self._stream.close()
        self._archive = self._stream = None
        self._member = None


class _TarMember:
    """The cursor's current member: its first bytes are kept for a second reader."""

    def __init__(self, extracted, cursor: TarCursor):
        self._extracted = extracted
        self._cursor = cursor
        self._kept = bytearray()
        self._live = 0           # bytes taken from the archive so far
        self._overrun = False    # more than REPLAY_BYTES were read: a second open starts over

    def replayable(self) -> bool:
        return not self._overrun

    def again(self) -> "_TarMemberReader":
        return _TarMemberReader(self)

    def take(self, offset: int, size: int) -> tuple[bytes, Damage | None]:
        if offset < self._live:
            return bytes(self._kept[offset:offset + size]), None
        try:
            data = self._extracted.read(size)
        except Exception as exc:  # the archive is cut or corrupt inside this member
            return b"", self._cursor._damage(exc)
        self._live += len(data)
        if len(self._kept) < REPLAY_BYTES:
            self._kept += data[: REPLAY_BYTES - len(self._kept)]
        if self._live > REPLAY_BYTES:
            self._overrun = True
        return data, None


class _TarMemberReader(io.RawIOBase):
    def __init__(self, member: _TarMember):
        super().__init__()
        self._member = member
        self._offset = 0
        self.damage: list[Damage] = []

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self.damage:
            return b""
        size = 1 << 20 if size is None or size < 0 else size
        data, damage = self._member.take(self._offset, size)
        if damage is not None:
            self.damage.append(damage)
        self._offset += len(data)
        return data

    def readinto(self, buffer) -> int:  # pragma: no cover
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


# ---------------------------------------------------------------- listing

@dataclass
class Member:
    steps: list[Step]
    name: str          # display path: bundle!member!member
    size: int          # bytes of the member in its archive (compressed size for zip)
    codec: str
    head: bytes        # decoded first bytes


@dataclass
class Problem:
    name: str
    reason: str
    kind: str          # a RunStats skip kind: corrupt, truncated, unreadable, too-deep, not-log
    size: int = 0


def list_members(path: str, display: str, kind: str, outer: str, steps: list[Step] | None = None,
                 depth: int = 1) -> Iterator[Member | Problem]:
    """Every member stream of an archive, nested archives opened in place, in archive order."""
    steps = steps or []
    if depth > MAX_DEPTH:
        yield Problem(display, f"an archive nested deeper than {MAX_DEPTH} levels: unpack it first", "too-deep")
        return
    listing = _zip_members if kind == "zip" else _tar_members
    seen: dict[str, int] = {}
    for item in listing(path, display, steps, outer):
        if isinstance(item, Problem):
            yield item
            continue
        step, size = item
        count = seen[step.name] = seen.get(step.name, 0) + 1
        name = f"{display}!{step.name}" + (f"#{count}" if count > 1 else "")
        chain = steps + [step]
        try:
            with open_member(path, chain) as raw:
                first = raw.read(8)
                codec = codec_of(first)
                rest = raw.read(4096)
            head = _decoded_head(path, chain, codec) if codec != "plain" else first + rest
        except Exception as exc:
            yield Problem(name, f"unreadable archive member ({exc})", "unreadable", size)
            continue
        nested = archive_kind(head, step.name)
        if nested is not None:
            yield from list_members(path, name, nested, codec if nested == "tar" else "plain", chain, depth + 1)
            continue
        yield Member(chain, name, size, codec, head)


def _decoded_head(path: str, chain: list[Step], codec: str) -> bytes:
    with decompressed(open_member(path, chain), codec, seekable=False) as stream:
        return stream.read(4096)


def _size_on_disk(path: str, steps: list[Step]) -> int:
    """The bytes of an archive that could not be opened, for the accounting: the file's size
    (a nested archive's own size is its member's, not known here: 0)."""
    if steps:
        return 0
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _zip_members(path: str, display: str, steps: list[Step], outer: str):
    key = (path,) + tuple(x for s in steps for x in (s.kind, s.index))
    opener = _member_opener(path, steps) if steps else _file_opener(path)
    try:
        archive = _zip(key, opener, outer)
        infos = archive.infolist()
    except Exception as exc:  # BadZipFile, OSError, a nested zip too big to hold
        yield Problem(display, f"unreadable zip archive ({exc})", "corrupt", _size_on_disk(path, steps))
        return
    for index, info in enumerate(infos):
        if info.is_dir():
            continue
        if info.flag_bits & 0x1:
            yield Problem(f"{display}!{info.filename}", "encrypted zip member", "unreadable", info.compress_size)
            continue
        yield Step("zip", index, info.filename, outer), info.compress_size


def _tar_members(path: str, display: str, steps: list[Step], outer: str):
    key = (path,) + tuple(x for s in steps for x in (s.kind, s.index))
    opener = _member_opener(path, steps) if steps else _file_opener(path)
    cursor = TarCursor(opener, outer)
    listed: list = []
    try:
        for index, info, damage in cursor.members():
            if info is None:
                assert damage is not None
                reason = damage.reason if damage.reason in ("truncated", "corrupt") else "corrupt"
                listed.append(Problem(display, f"the archive ends early after {index} member(s): "
                                               f"{damage.message}", reason, damage.lost))
                break
            if info.isfile():
                listed.append((Step("tar", index, info.name, outer), info.size))
            elif not info.isdir():   # a link, device or FIFO has no content of its own to read: said
                what = ("a symbolic link" if info.issym() else "a hard link" if info.islnk() else
                        "a character device" if info.ischr() else "a block device" if info.isblk() else
                        "a FIFO" if info.isfifo() else "not a regular file")
                target = f" to {info.linkname}" if info.issym() or info.islnk() else ""
                listed.append(Problem(f"{display}!{info.name}", f"{what}{target} in the archive, not read",
                                      "link" if info.issym() or info.islnk() else "not-log", 0))
    except Exception as exc:
        listed.append(Problem(display, f"unreadable tar archive ({exc})", "corrupt", _size_on_disk(path, steps)))
    finally:
        cursor.close()
    _CURSORS.pop(key, None)
    yield from listed
