"""Process-wide settings for reading a lot of log: the garbage collector and glibc's allocator.

Called once per process that reads (the CLI, each Spark Python worker); forked workers of the
in-process engine inherit them.

* Garbage collector. A run allocates millions of short-lived, acyclic objects (records, event
  rows) beside a large long-lived set (packs, compiled patterns, imported modules). With the
  default thresholds the cyclic collector walked that set ~700 times per 2 GiB run (0.3-0.4 s
  of ~9 s); rarer young collections keep it to a few. Reference counting still frees the
  events as they are written.
* Allocator. Every chunk brings new multi-megabyte buffers (the chunk, its newline mask, the
  next read). glibc serves blocks above its mmap threshold with fresh mappings, and trims the
  heap top when more than its trim threshold is free; either way the next chunk's buffers
  fault every page in again: ~300,000 page faults and 1.2-1.3 s of system time per 2 GiB. With
  both thresholds fixed above the chunk's buffers (4 MiB chunks, a chunk and its carried tail
  below 16 MiB) the buffers are reused from the heap: ~25,000 faults and 0.5 s. 16 MiB rather
  than more: the heap keeps up to that much free, which is resident memory. A no-op off glibc.
"""

from __future__ import annotations

import ctypes
import gc

GC_THRESHOLDS = (50_000, 50, 50)
ALLOCATOR_THRESHOLD_BYTES = 16 << 20
_M_TRIM_THRESHOLD = -1  # mallopt parameters, from glibc's malloc.h
_M_MMAP_THRESHOLD = -3

_done = False


def tune_for_reading() -> None:
    global _done
    if _done:
        return
    _done = True
    gc.set_threshold(*GC_THRESHOLDS)
    _tune_glibc_malloc()


def _tune_glibc_malloc() -> None:
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library the interpreter runs on
    except (OSError, AttributeError, TypeError):  # no mallopt: not glibc (macOS, Windows)
        return
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt(_M_MMAP_THRESHOLD, ALLOCATOR_THRESHOLD_BYTES)
    mallopt(_M_TRIM_THRESHOLD, ALLOCATOR_THRESHOLD_BYTES)
