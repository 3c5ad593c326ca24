"""Damaged and hostile inputs, made by our own generator (never copied from real logs).

Each ``make_*`` function writes one case of issue 21 into a directory and returns its path; the
regression tests (tests/test_hostile.py), the hypothesis suite (tests/test_damage.py) and the
benchmark (benchmarks/hostile.py) build on them. ``python tests/hostile.py DIR`` writes every case
at once (a directory mixing all damaged kinds with good files).

The logs are real-format Kafka broker and consumer records (Kafka's shipped log4j layout,
``[%d] %p %m (%c)%n``), numbered so that each intact record can be told from the others.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import struct
import sys
import tarfile
import zipfile
import zlib
from datetime import datetime, timedelta, timezone
from pathlib import Path

T0 = datetime(2024, 5, 1, 13, 45, 12, 345000, tzinfo=timezone.utc)
BROKER = "kafka.coordinator.group.GroupCoordinator"
CLIENT = "org.apache.kafka.clients.consumer.internals.ConsumerCoordinator"

# Real Kafka wordings (the broker's GroupCoordinator and the consumer's ConsumerCoordinator).
# Each {n} makes the record unique; each yields exactly one event.
STORY = (
    (BROKER, "INFO", "[GroupCoordinator 1]: Preparing to rebalance group orders-{n} in state PreparingRebalance "
                     "with old generation {n} (__consumer_offsets-17) (reason: removing member "
                     "consumer-orders-2-77aa on heartbeat expiration)"),
    (CLIENT, "INFO", "[Consumer clientId=consumer-orders-1, groupId=orders-{n}] Request joining group due to: "
                     "group is already rebalancing"),
    (CLIENT, "INFO", "[Consumer clientId=consumer-orders-1, groupId=orders-{n}] (Re-)joining group"),
    (CLIENT, "INFO", "[Consumer clientId=consumer-orders-1, groupId=orders-{n}] Successfully joined group with "
                     "generation Generation{{generationId={n}, memberId='consumer-orders-1-6b1f', protocol='range'}}"),
    (BROKER, "INFO", "[GroupCoordinator 1]: Stabilized group orders-{n} generation {n} (__consumer_offsets-17) "
                     "with 2 members"),
)
# Lines that are records but no events (they hold no rebalance wording), and a stack trace.
NOISE = (
    "[{ts}] INFO [Consumer clientId=consumer-orders-1, groupId=orders-{n}] Node 2 disconnected. "
    "(org.apache.kafka.clients.NetworkClient)",
    "[{ts}] ERROR failed to process record (com.example.OrderProcessor)\n"
    "java.lang.IllegalStateException: boom\n\tat com.example.OrderProcessor.process(OrderProcessor.java:42)",
)


def ts(i: int) -> str:
    t = T0 + timedelta(milliseconds=1000 * i)
    return f"{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d}"


def record(i: int) -> str:
    """Record i: an event record (i % 7 < 5) or a noise record."""
    kind, n = i % 7, i // 7 + 1
    if kind < len(STORY):
        logger, level, msg = STORY[kind]
        return f"[{ts(i)}] {level} {msg.format(n=n)} ({logger})"
    return NOISE[kind - len(STORY)].format(ts=ts(i), n=n)


def is_event(i: int) -> bool:
    return i % 7 < len(STORY)


def kafka_log(records: int = 70, start: int = 0, newline: str = "\n") -> bytes:
    """``records`` consecutive records from ``start``, each ending with ``newline``."""
    return "".join(record(i).replace("\n", newline) + newline for i in range(start, start + records)).encode()


def events_in(records: int = 70, start: int = 0) -> int:
    return sum(1 for i in range(start, start + records) if is_event(i))


# ---------------------------------------------------------------- damaged compressed streams

def gzip_bad_crc(data: bytes) -> bytes:
    """A gzip member whose CRC-32 in the trailer is wrong (every byte of the data is intact)."""
    packed = bytearray(gzip.compress(data))
    packed[-8:-4] = struct.pack("<I", (zlib.crc32(data) ^ 0xFFFFFFFF) & 0xFFFFFFFF)
    return bytes(packed)


def truncated(data: bytes, keep: float = 0.6) -> bytes:
    return data[: int(len(data) * keep)]


def make_gzip_bad_crc(directory: Path, records: int = 700) -> Path:
    path = directory / "gzip-bad-crc" / "server.log.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip_bad_crc(kafka_log(records)))
    return path


def make_gzip_truncated(directory: Path, records: int = 7000) -> Path:
    path = directory / "gzip-truncated" / "server.log.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(truncated(gzip.compress(kafka_log(records))))
    return path


def make_xz_corrupt(directory: Path) -> Path:
    data = bytearray(lzma.compress(kafka_log(700)))
    data[len(data) // 2] ^= 0xFF
    path = directory / "xz-corrupt" / "server.log.xz"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(data))
    return path


def make_bz2_truncated(directory: Path) -> Path:
    path = directory / "bz2-truncated" / "server.log.bz2"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(truncated(bz2.compress(kafka_log(7000))))
    return path


def make_zstd_truncated(directory: Path) -> Path | None:
    try:
        import zstandard
    except ImportError:
        return None
    path = directory / "zstd-truncated" / "server.log.zst"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(truncated(zstandard.ZstdCompressor().compress(kafka_log(7000))))
    return path


def make_zstd_corrupt(directory: Path) -> Path | None:
    try:
        import zstandard
    except ImportError:
        return None
    data = bytearray(zstandard.ZstdCompressor().compress(kafka_log(7000)))
    for at in range(len(data) // 2, len(data) // 2 + 64):
        data[at] ^= 0x5A
    path = directory / "zstd-corrupt" / "server.log.zst"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(data))
    return path


# ---------------------------------------------------------------- binary regions, encodings, endings

def make_copytruncate(directory: Path, hole: int = 64 << 10) -> Path:
    """What copytruncate leaves when the writer keeps its offset: a block of NULs, then new lines."""
    path = directory / "copytruncate" / "server.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x00" * hole + kafka_log(70))
    return path


def make_nul_in_head(directory: Path) -> Path:
    """One NUL byte inside line 3 of an otherwise good log."""
    lines = kafka_log(70).split(b"\n")
    lines[2] = lines[2][:40] + b"\x00" + lines[2][40:]
    path = directory / "nul-in-head" / "server.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\n".join(lines))
    return path


def make_utf16(directory: Path, encoding: str = "utf-16-le") -> Path:
    bom = b"\xff\xfe" if encoding.endswith("le") else b"\xfe\xff"
    path = directory / f"{encoding}" / "server.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bom + kafka_log(70, newline="\r\n").decode().encode(encoding))
    return path


def make_cr_only(directory: Path) -> Path:
    path = directory / "cr-only" / "server.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(kafka_log(70, newline="\r"))
    return path


# ---------------------------------------------------------------- bundles

def _tar_bytes(members: list[tuple[str, bytes]], mode: str = "w:gz") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as bundle:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 1714571112
            bundle.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def make_truncated_tar(directory: Path) -> Path:
    """A tar.gz of three logs cut inside the third: the first two are whole."""
    members = [(f"broker-{k}/server.log", kafka_log(700, start=700 * k)) for k in range(3)]
    data = _tar_bytes(members)
    path = directory / "truncated-tar" / "bundle.tar.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data[: int(len(data) * 0.85)])
    return path


def make_nested(directory: Path) -> Path:
    """A zip of tar.gz files, as support portals make them."""
    path = directory / "nested" / "support-case.zip"
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as outer:
        for k in range(2):
            outer.writestr(f"case/node-{k}.tar.gz", _tar_bytes([(f"broker-{k}/server.log",
                                                                 kafka_log(70, start=70 * k))]))
    return path


def make_same_member_names(directory: Path) -> Path:
    """Two members with the same name (appended twice to the tar, as `tar -r` does)."""
    path = directory / "same-names" / "bundle.tar"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_tar_bytes([("logs/server.log", kafka_log(70)), ("logs/server.log", kafka_log(70, start=70))],
                                mode="w"))
    return path


def make_many_member_tar(directory: Path, members: int = 2000) -> Path:
    path = directory / "many-tar" / "bundle.tar.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_tar_bytes([(f"pods/pod-{k}/app.log", kafka_log(7, start=7 * k)) for k in range(members)]))
    return path


def make_many_member_zip(directory: Path, members: int = 20000) -> Path:
    path = directory / "many-zip" / "bundle.zip"
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as bundle:
        for k in range(members):
            bundle.writestr(f"pods/pod-{k}/app.log", kafka_log(7, start=7 * k))
    return path


def make_bad_zip(directory: Path) -> Path:
    """A zip whose central directory is cut off."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr("broker-1/server.log", kafka_log(700))
    path = directory / "bad-zip" / "bundle.zip"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buffer.getvalue()[:-30])
    return path


# ---------------------------------------------------------------- bombs and long lines

def gzip_bomb(path: Path, decompressed: int, line: bytes | None = None) -> Path:
    """A gzip file of ``decompressed`` bytes: repeated ``line`` (default: a whole record)."""
    line = line if line is not None else kafka_log(1)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9) as packed:
        block = line * max(1, (1 << 20) // len(line))
        written = 0
        while written < decompressed:
            piece = block[: decompressed - written]
            packed.write(piece)
            written += len(piece)
    return path


def long_line_after_record(path: Path, size: int) -> Path:
    """A record start followed by one continuation line of ``size`` bytes, then good records."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as out:
        out.write(kafka_log(7))
        out.write(kafka_log(1, start=7))  # a record (an event) whose next line is the long one
        block = b"y" * (1 << 20)
        left = size
        while left > 0:
            out.write(block[:left])
            left -= len(block)
        out.write(b"\n")
        out.write(kafka_log(7, start=14))
    return path


def make_space_runs(directory: Path, runs: int = 3, length: int = 1 << 20) -> Path:
    """Spring Boot records whose envelope holds a long run of spaces, between good records."""
    path = directory / "space-runs" / "app.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    head = "2024-05-01 13:45:12.345  INFO 1 --- [           main] o.a.k.c.c.i.ConsumerCoordinator          : "
    good = (head + "[Consumer clientId=consumer-orders-1, groupId=orders] (Re-)joining group\n").encode()
    bad = ("2024-05-01 13:45:12.345  INFO" + " " * length + "x\n").encode()
    path.write_bytes(good + b"".join(bad + good for _ in range(runs)))
    return path


def make_spring_backtrack(directory: Path, size: int = 330 << 10) -> Path:
    """A Spring Boot log whose lines hold long runs of spaces after the level (a padded MDC)."""
    path = directory / "spring-backtrack" / "app.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    head = "2024-05-01 13:45:12.345  INFO 1 --- [           main] o.a.k.c.c.i.ConsumerCoordinator          : "
    good = (head + "[Consumer clientId=consumer-orders-1, groupId=orders] (Re-)joining group\n").encode()
    spaced = ("2024-05-01 13:45:12.346  INFO" + " " * 2000 + "1 -- [main] x : y\n").encode()
    body = good * 20
    while len(body) < size:
        body += spaced
    path.write_bytes(body + good)
    return path


# ---------------------------------------------------------------- hostile text

ESCAPES = {
    "title": "\x1b]0;pwned\x07",
    "cursor": "\x1b[2J\x1b[H",
    "osc8": "\x1b]8;;https://example.invalid/\x1b\\click\x1b]8;;\x1b\\",
    "bidi": "\u202e",
}


def make_escapes(directory: Path) -> Path:
    """A consumer log whose member and group names carry terminal escape sequences."""
    path = directory / "escapes" / "node1.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    group = f"orders{ESCAPES['title']}{ESCAPES['cursor']}"
    client = f"consumer-{ESCAPES['osc8']}{ESCAPES['bidi']}-1"
    lines = [
        f"[{ts(0)}] WARN [Consumer clientId={client}, groupId={group}] consumer poll timeout has expired. This "
        "means the time between subsequent calls to poll() was longer than the configured max.poll.interval.ms, "
        f"which typically implies that the poll loop is spending too much time processing messages. ({CLIENT})",
        f"[{ts(1)}] INFO [Consumer clientId={client}, groupId={group}] Request joining group due to: "
        f"group is already rebalancing {ESCAPES['cursor']} ({CLIENT})",
        # Escapes without brackets (a terminal reset, a bell, a bidi override) inside the fields
        # a pattern captures: the record is read, and its group and member carry them.
        f"[{ts(2)}] WARN [Consumer clientId=consumer-\x1bc-1, groupId=orders\x07\u202e] consumer poll timeout "
        "has expired. This means the time between subsequent calls to poll() was longer than the configured "
        "max.poll.interval.ms, which typically implies that the poll loop is spending too much time processing "
        f"messages. ({CLIENT})",
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def many_records_line(records: int = 40) -> bytes:
    """One line holding ``records`` broker records between HTML markup, as an HTML report of an
    earlier run holds them (or a log that lost its line ends): every record's text is there, the
    line's end is not a record's end."""
    parts = []
    for i in range(records):
        parts.append(f'<li><code class="ref">server.log:{i}</code> <span class="logline">{record(7 * i)}</span></li>'
                     f'<p class="fix"><strong>Fix</strong>: raise session.timeout.ms (see docs).</p>')
    return ("".join(parts) + "</ul></html>\n").encode()


def make_many_records_line(directory: Path, records: int = 40) -> Path:
    """Good records, a line holding ``records`` records (``many_records_line``), good records."""
    path = directory / "many-records" / "server.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(kafka_log(70) + (f"[{ts(70)}] INFO ").encode() + many_records_line(records)
                     + kafka_log(70, start=71))
    return path


def make_oversized_line(directory: Path, size: int = 9 << 20) -> Path:
    """A record followed by one line longer than the 8 MiB line limit, then good records."""
    return long_line_after_record(directory / "oversized" / "server.log", size)


def make_all(directory: Path, big: bool = False) -> list[Path]:
    """Every case (the big ones, bombs and many-member bundles, only when ``big``)."""
    directory.mkdir(parents=True, exist_ok=True)
    good = directory / "good" / "server.log"
    good.parent.mkdir(parents=True, exist_ok=True)
    good.write_bytes(kafka_log(700))
    made = [good]
    for make in (make_gzip_bad_crc, make_gzip_truncated, make_xz_corrupt, make_bz2_truncated, make_zstd_truncated,
                 make_zstd_corrupt, make_copytruncate, make_nul_in_head, make_utf16, make_cr_only,
                 make_truncated_tar, make_nested, make_same_member_names, make_bad_zip, make_escapes,
                 make_space_runs, make_many_records_line, make_oversized_line):
        made.append(make(directory))
    made.append(make_utf16(directory, "utf-16-be"))
    if big:
        made.append(make_many_member_tar(directory))
        made.append(make_many_member_zip(directory))
        made.append(gzip_bomb(directory / "bomb" / "server.log.gz", 2 << 30))
        made.append(make_spring_backtrack(directory))
    return [p for p in made if p is not None]


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python tests/hostile.py DIR [--big]")
    for made in make_all(Path(sys.argv[1]), big="--big" in sys.argv):
        print(made, os.path.getsize(made))
