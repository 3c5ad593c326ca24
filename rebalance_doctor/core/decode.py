"""From the bytes of an input to log text: decompression by magic bytes, then text normalisation.

Every stream a source opens is a ``Decoded`` stream (``open_decoded``), and every byte of the
input either comes out of it or is accounted for:

* **Decompression** (gzip, bzip2, xz, zstd; concatenated members and frames too) is streamed
  with a bounded output per call, so memory does not depend on the decompressed size (a gzip
  bomb is read like any other file). Damage ends the stream without an exception: what decoded
  before it is returned (gzip exactly to the last intact byte: a bad CRC loses nothing; the
  other codecs up to the last block they could check), and ``damages()`` says what happened and
  how many input bytes after it could not be decoded. The piece of a line such a stream ends in
  is the reader's to leave out (``ended_in_damage``).
* **Text** (``TextStream``): UTF-16 (with a byte-order mark, or unmistakably ASCII in UTF-16)
  is transcoded to UTF-8; a UTF-8 byte-order mark is dropped; CR-only line ends (old Mac
  exports) become newlines; NUL bytes (copytruncate's hole, preallocated blocks after a crash)
  are taken out of the text and counted as a binary region, so the records around them are
  read and only the region is skipped.

A plain file that needs no length-changing normalisation stays seekable with the offsets of the
file (``length_preserving``): it can be read in byte ranges. NULs in such a file are moved to the
end of their line instead of being removed (the records after them start their lines again), and
the parser drops them from the record text.
"""

from __future__ import annotations

import bz2
import codecs
import lzma
import zlib
from dataclasses import dataclass
from typing import BinaryIO

GZIP_MAGIC = b"\x1f\x8b"
BZIP2_MAGIC = b"BZh"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
XZ_MAGIC = b"\xfd7zXZ\x00"
CODECS = ("plain", "gzip", "bz2", "xz", "zstd")

INPUT_PIECE = 256 << 10  # compressed bytes handed to a decompressor at a time (output is bounded apart)
ZSTD_PIECE = 1 << 10     # zstd's decompressor has no output bound: small inputs bound its output
XZ_PIECE = 4 << 10       # an xz error drops the output of its call: small inputs keep that small
HEAD_BYTES = 64 << 10    # what text normalisation is decided from
UTF8_BOM = b"\xef\xbb\xbf"
UTF16_BOMS = {b"\xff\xfe": "utf-16-le", b"\xfe\xff": "utf-16-be"}


def codec_of(head: bytes) -> str:
    """The compression of a stream, from its first bytes."""
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(BZIP2_MAGIC):
        return "bz2"
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    if head.startswith(XZ_MAGIC):
        return "xz"
    return "plain"


def zstd_available() -> bool:
    try:
        import zstandard  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass
class Damage:
    """What went wrong in a stream, and how many input bytes after it could not be decoded."""

    reason: str      # "corrupt", "truncated" or "unreadable"
    message: str
    lost: int = 0    # input (on-disk) bytes that could not be decoded; 0 when the rest is missing
    ended: bool = True  # the stream stopped there (False: a bad checksum; the data was read)


class Decoded:
    """A read-only binary stream that never raises for damaged input.

    ``read(n)`` returns at most n bytes, b"" only at the end. ``consumed`` counts the bytes
    taken from the layer below; ``damages()`` and ``unread()`` (after the end) say what went
    wrong in this layer and the ones below it.
    """

    length_preserving = False
    file = None  # the file on disk the stream reads, when it reads one (its identity is checked)

    def __init__(self, inner: "Decoded | None" = None) -> None:
        self.inner = inner
        self.damage: list[Damage] = []      # this layer's own
        self.skipped: dict[str, int] = {}   # bytes taken by this layer but not given as text, by reason
        self.consumed = 0

    def read(self, size: int = -1) -> bytes:  # pragma: no cover - every stream defines it
        raise NotImplementedError

    def damages(self) -> list[Damage]:
        return (self.inner.damages() if self.inner else []) + self.damage

    def unread(self) -> dict[str, int]:
        found = dict(self.inner.unread()) if self.inner else {}
        for reason, count in self.skipped.items():
            found[reason] = found.get(reason, 0) + count
        return found

    def _skip(self, reason: str, count: int) -> None:
        if count:
            self.skipped[reason] = self.skipped.get(reason, 0) + count

    def close(self) -> None:
        if self.inner is not None:
            self.inner.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


class Plain(Decoded):
    """An uncompressed stream; seekable when the file is. A read error (EIO) ends it as damage."""

    def __init__(self, raw: BinaryIO, seekable: bool = True):
        super().__init__()
        self._raw = raw
        self.length_preserving = seekable and _seekable(raw)

    def read(self, size: int = -1) -> bytes:
        if self.damage:
            return b""
        try:
            data = self._raw.read(size)
        except Exception as exc:  # whatever a damaged member or device raises ends this stream
            self.damage.append(read_error(exc, self.consumed))
            return b""
        self.consumed += len(data)
        return data

    def damages(self) -> list[Damage]:
        return list(getattr(self._raw, "damage", [])) + self.damage

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._raw.seek(offset, whence)

    def close(self) -> None:
        self._raw.close()


class Decompressed(Decoded):
    """A compressed stream of one or more members/frames, decoded with bounded output per call."""

    def __init__(self, raw: BinaryIO, codec: str):
        super().__init__()
        self._raw = raw
        self._codec = codec
        self._magic = {"gzip": GZIP_MAGIC, "bz2": BZIP2_MAGIC, "xz": XZ_MAGIC, "zstd": ZSTD_MAGIC}[codec]
        self._piece = {"zstd": ZSTD_PIECE, "xz": XZ_PIECE}.get(codec, INPUT_PIECE)
        self._errors: tuple = (zlib.error, OSError, EOFError, ValueError, lzma.LZMAError)
        if codec == "zstd":
            import zstandard

            self._errors += (zstandard.ZstdError,)
        self._pending = b""        # input read but not handed to a decompressor yet
        self._engine = None        # the current member's decompressor
        self._members = 0
        self._done = False

    def _new_engine(self):
        if self._codec == "gzip":
            return zlib.decompressobj(31)  # gzip header and trailer (CRC-32, size) checked by zlib
        if self._codec == "bz2":
            return bz2.BZ2Decompressor()
        if self._codec == "xz":
            return lzma.LZMADecompressor()
        import zstandard

        return zstandard.ZstdDecompressor().decompressobj()

    def _fill(self) -> bool:
        """Read more input; False at the end of the raw stream (or when it cannot be read)."""
        try:
            data = self._raw.read(self._piece)
        except Exception as exc:  # whatever a damaged member or device raises ends this stream
            self._end(read_error(exc, self.consumed))
            return False
        self.consumed += len(data)
        self._pending += data
        return bool(data)

    def _end(self, damage: Damage | None) -> None:
        self._done = True
        self._engine = None
        if damage is not None:
            if damage.reason == "corrupt":
                damage.lost += self._rest()[0]
            self.damage.append(damage)

    def _rest(self) -> tuple[int, bool]:
        """Read what is left of the input: (its size, whether it is all zero bytes)."""
        left, zero = len(self._pending), not self._pending.strip(b"\x00")
        self._pending = b""
        try:
            while True:
                data = self._raw.read(1 << 20)
                if not data:
                    break
                self.consumed += len(data)
                left += len(data)
                zero = zero and not data.strip(b"\x00")
        except OSError:
            pass
        return left, zero

    def read(self, size: int = -1) -> bytes:
        wanted = size if size is not None and size >= 0 else 1 << 62
        out: list[bytes] = []
        got = 0
        while got < wanted and not self._done:
            if self._engine is None and not self._start_member():
                break
            engine = self._engine
            starving = getattr(engine, "needs_input", True)  # bz2/lzma may hold input back
            if not self._pending and starving and not self._fill():
                if not self._done:
                    self._end(Damage("truncated", "compressed stream ends early (truncated file)"))
                break
            if len(self._pending) <= self._piece:
                data, self._pending = self._pending, b""
            else:
                data, self._pending = self._pending[:self._piece], self._pending[self._piece:]
            backup = engine.copy() if self._codec == "gzip" else None
            try:
                if self._codec == "zstd":
                    chunk = engine.decompress(data)
                else:
                    chunk = engine.decompress(data, wanted - got)
            except self._errors as exc:
                recovered, used = _recover(backup, data) if backup is not None else (b"", 0)
                if recovered:
                    out.append(recovered)
                    got += len(recovered)
                damage = self._describe(exc)
                if damage.reason == "checksum":
                    # The member's data is all there; only its trailer disagrees: go on after it.
                    self.damage.append(Damage("corrupt", damage.message, 0, ended=False))
                    after = used + (5 if "data check" in str(exc) else 1)
                    self._pending = data[after:] + self._pending
                    self._engine = None
                    continue
                self._pending = data[used:] + self._pending
                self._end(damage)
                break
            if chunk:
                out.append(chunk)
                got += len(chunk)
            if engine.eof:  # what follows the member (zlib may also leave it in unconsumed_tail)
                self._pending = engine.unused_data + self._pending
                self._engine = None
            elif self._codec == "gzip":
                self._pending = engine.unconsumed_tail + self._pending
        return b"".join(out)

    def _start_member(self) -> bool:
        """Begin the next member/frame; False at the end of the stream."""
        while len(self._pending) < len(self._magic) and self._fill():
            pass
        if self._done:
            return False
        if not self._pending:
            self._end(None if self._members else Damage("truncated", "empty compressed stream"))
            return False
        if not self._pending.startswith(self._magic):
            size, zero = self._rest()
            if self._members and zero:
                self._end(None)  # zero padding after the last member (tape blocks, xz padding)
            else:
                self._end(Damage("corrupt", f"{size} bytes after the last complete {self._codec} "
                                            f"member are not {self._codec} data", size))
            return False
        self._engine = self._new_engine()
        self._members += 1
        return True

    def _describe(self, exc: BaseException) -> Damage:
        text = str(exc) or type(exc).__name__
        if "incorrect data check" in text or "incorrect length check" in text:
            return Damage("checksum", f"{self._codec} member {self._members} fails its checksum "
                                      f"(its data was read; some of it may be wrong)")
        if isinstance(exc, EOFError) or "end-of-stream" in text:
            return Damage("truncated", "compressed stream ends early (truncated file)")
        return Damage("corrupt", f"corrupt {self._codec} data in member {self._members} ({text})")

    def damages(self) -> list[Damage]:
        return list(getattr(self._raw, "damage", [])) + self.damage

    def close(self) -> None:
        self._raw.close()


def read_error(exc: BaseException, offset: int) -> Damage:
    """The damage a failing read of raw bytes stands for."""
    text = str(exc) or type(exc).__name__
    if isinstance(exc, EOFError) or "unexpected end" in text or "ended before" in text:
        return Damage("truncated", f"input ends early after {offset} bytes ({text})")
    if isinstance(exc, OSError) and exc.strerror:
        return Damage("unreadable", f"read error after {offset} bytes ({exc.strerror})")
    if isinstance(exc, (RuntimeError, NotImplementedError)):
        return Damage("unreadable", f"cannot be read ({text})")
    return Damage("corrupt", f"corrupt data after {offset} bytes ({type(exc).__name__}: {text})")


def _recover(backup, data: bytes) -> tuple[bytes, int]:
    """What a zlib stream decodes from the longest prefix of ``data`` that raises no error
    (bisection over copies of its state before the failing call), and that prefix's length."""
    lo, hi, best = 0, len(data), (b"", 0)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        trial = backup.copy()
        try:
            out = trial.decompress(data[:mid])
        except zlib.error:
            hi = mid - 1
            continue
        best = (out, mid)
        lo = mid
    return best


# ---------------------------------------------------------------- text

class TextStream(Decoded):
    """Log text from a decoded stream: see the module docstring for what is normalised."""

    def __init__(self, inner: Decoded, form: "TextForm", drop_nul: bool):
        super().__init__(inner)
        self._decoder = codecs.getincrementaldecoder(form.encoding)("replace") if form.encoding else None
        self._cr_only = form.cr_only
        self._bom = form.bom          # byte-order mark bytes still to drop
        self._nul_seen_to = 0         # (shifting) NULs before this offset were counted already
        self._nul_count_to: int | None = None  # and NULs from this offset on are another range's
        self._offset = 0              # offset in the stream below of the next byte read
        self.length_preserving = (form.encoding is None and not form.bom and not drop_nul
                                  and inner.length_preserving)

    def read(self, size: int = -1) -> bytes:
        return self._read(size)

    def ended_in_damage(self) -> bool:
        """Whether the stream stopped at damage: its last line is then a piece of a line."""
        return any(d.ended for d in self.damages())

    def _read(self, size: int = -1) -> bytes:
        while True:
            data = self.inner.read(size)  # type: ignore[union-attr]
            start = self._offset
            self._offset += len(data)
            self.consumed += len(data)
            if not data:
                return self._final()
            if self._bom:
                cut = min(self._bom, len(data))
                self._bom -= cut
                self._skip("encoding", cut)
                data = data[cut:]
            if self._decoder is not None:
                text = self._decoder.decode(data)
                self._skip("encoding", 2 * text.count("\ufffd"))
                data = text.encode("utf-8")
            if self._cr_only and b"\r" in data:
                data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            if b"\x00" in data:
                data = self._nuls(data, start)
            if data or size == 0:
                return data

    def _final(self) -> bytes:
        if self._decoder is None:
            return b""
        text = self._decoder.decode(b"", final=True)
        self._decoder = None
        self._skip("encoding", 2 * text.count("\ufffd"))
        return text.encode("utf-8").translate(None, b"\x00")

    def _nuls(self, data: bytes, start: int) -> bytes:
        if not self.length_preserving:
            self._skip("binary", data.count(b"\x00"))
            return data.translate(None, b"\x00")
        # Same length, same offsets: each line's NULs go to its end (a record after a NUL run
        # starts its line again); the parser removes them from the record text.
        if start + len(data) > self._nul_seen_to:  # a range read again is counted once
            counted_to = len(data) if self._nul_count_to is None else max(self._nul_count_to - start, 0)
            self._skip("binary", data.count(b"\x00", max(self._nul_seen_to - start, 0), counted_to))
            self._nul_seen_to = start + len(data)
        lines = data.split(b"\n")
        for i, line in enumerate(lines):
            if b"\x00" in line:
                kept = line.translate(None, b"\x00")
                lines[i] = kept + b"\x00" * (len(line) - len(kept))
        return b"\n".join(lines)

    def count_nuls_in(self, start: int, end: int | None) -> None:
        """Count the NULs of [start, end) only (a byte range of the file: the reader reads a little
        before and after it, which its neighbours count)."""
        self._nul_seen_to, self._nul_count_to = start, end

    def seek(self, offset: int, whence: int = 0) -> int:
        if not self.length_preserving:
            raise OSError("this stream cannot seek")
        self._offset = self.inner.seek(offset, whence)  # type: ignore[union-attr]
        return self._offset

    def tell(self) -> int:
        return self._offset


@dataclass(frozen=True)
class TextForm:
    """What a stream's head says about its text."""

    encoding: str | None = None   # "utf-16-le" / "utf-16-be" when transcoded
    bom: int = 0                  # byte-order mark bytes to drop
    cr_only: bool = False
    nul_in_head: bool = False

    @property
    def plain(self) -> bool:
        """Read as it is, offsets those of the file (NULs later on are shifted, not removed)."""
        return self.encoding is None and not self.bom and not self.nul_in_head and not self.cr_only


def text_form(head: bytes) -> TextForm:
    for bom, encoding in UTF16_BOMS.items():
        if head.startswith(bom):
            return TextForm(encoding, len(bom), _cr_only(head[len(bom):].decode(encoding, "replace")))
    if head.startswith(UTF8_BOM):
        return TextForm(None, len(UTF8_BOM), _cr_only(head), b"\x00" in head)
    guessed = _utf16_without_bom(head)
    if guessed:
        return TextForm(guessed, 0, _cr_only(head.decode(guessed, "replace")))
    return TextForm(None, 0, _cr_only(head), b"\x00" in head)


def _cr_only(head) -> bool:
    cr, nl = ("\r", "\n") if isinstance(head, str) else (b"\r", b"\n")
    return cr in head and nl not in head


def _utf16_without_bom(head: bytes) -> str | None:
    """UTF-16 of mostly ASCII text without a byte-order mark: every other byte NUL."""
    sample = head[:4096]
    if len(sample) < 64:
        return None
    for encoding, zeros, chars in (("utf-16-le", sample[1::2], sample[0::2]),
                                   ("utf-16-be", sample[0::2], sample[1::2])):
        if zeros.count(0) >= 0.95 * len(zeros) and chars.count(0) <= 0.01 * len(chars):
            return encoding
    return None


def _seekable(raw) -> bool:
    try:
        return bool(raw.seekable())
    except (AttributeError, OSError, ValueError):
        return False


class _Head(Decoded):
    """A decoded stream whose first bytes were read ahead (to decide the text form) and are
    given back first; seeking (plain files) goes to the stream below."""

    def __init__(self, inner: Decoded, size: int):
        super().__init__(inner)
        pieces, got = [], 0
        while got < size:
            piece = inner.read(size - got)
            if not piece:
                break
            pieces.append(piece)
            got += len(piece)
        self.data = b"".join(pieces)
        self._given = 0
        self.length_preserving = inner.length_preserving

    def read(self, size: int = -1) -> bytes:
        if self._given < len(self.data):
            if size is None or size < 0:
                piece, self._given = self.data[self._given:], len(self.data)
                return piece + self.inner.read(-1)  # type: ignore[union-attr]
            piece = self.data[self._given:self._given + size]
            self._given += len(piece)
            return piece
        return self.inner.read(size)  # type: ignore[union-attr]

    def seek(self, offset: int, whence: int = 0) -> int:
        self._given = len(self.data)  # plain files only: the stream below is the file itself
        return self.inner.seek(offset, whence)  # type: ignore[union-attr]


def decompressed(raw: BinaryIO, codec: str, seekable: bool = True) -> Decoded:
    """The decompressed bytes of a raw stream (no text normalisation: archives are read so)."""
    return Plain(raw, seekable) if codec == "plain" else Decompressed(raw, codec)


def open_decoded(raw: BinaryIO, codec: str, seekable: bool = True) -> Decoded:
    """The log text of a raw stream compressed with ``codec`` (see ``codec_of``).

    Seekable and with the file's offsets (``length_preserving``) when ``seekable`` and the raw
    stream is an uncompressed seekable file whose head needs no normalisation (``TextForm.plain``).
    """
    inner = decompressed(raw, codec, seekable)
    head = _Head(inner, HEAD_BYTES)
    form = text_form(head.data)
    return TextStream(head, form, drop_nul=not (inner.length_preserving and form.plain))


__all__ = ["CODECS", "Damage", "Decoded", "TextForm", "codec_of", "decompressed", "open_decoded", "read_error",
           "text_form", "zstd_available"]
