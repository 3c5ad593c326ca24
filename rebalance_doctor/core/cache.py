"""The user's cache directory: derived data that only saves start-up time, and that nobody else
can slip in.

What is kept there is named by a hash of everything it was derived from (so a changed input is
simply a file not found) and **sealed**: each file carries an HMAC-SHA256 of its content, keyed
by a random secret that only this user can read (``key``, created on first use). A file that
does not verify (damaged, edited by hand, copied from another user or machine, planted) is not
used: the data is derived again, the file rewritten, and a note says so. The directory is
``$REBALANCE_DOCTOR_CACHE``, else ``$XDG_CACHE_HOME/rebalance-doctor``, else
``~/.cache/rebalance-doctor``; it is made private to the user (0700, files 0600), and a
directory someone else owns or may write to is not used at all. ``REBALANCE_DOCTOR_CACHE=off``
turns the cache off. A cache that cannot be read or written is ignored.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
import tempfile
from pathlib import Path

CACHE_VARIABLE = "REBALANCE_DOCTOR_CACHE"
KEY_FILE = "key"
_DIGEST = 32

notes: list[str] = []  # what the cache had to say in this process (the CLI prints them)
_checked: dict[str, bool] = {}
_keys: dict[str, bytes] = {}


def cache_dir() -> Path | None:
    setting = os.environ.get(CACHE_VARIABLE)
    if setting == "off":
        return None
    if setting:
        return Path(setting)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rebalance-doctor"


def cache_file(name: str) -> Path | None:
    """Where an entry lives, or None when there is no usable cache."""
    directory = _private_dir()
    return None if directory is None else directory / name


def _note(text: str) -> None:
    if text not in notes:
        notes.append(text)


def _private_dir() -> Path | None:
    """The cache directory, made if missing; None when it is off, or not the user's alone."""
    directory = cache_dir()
    if directory is None:
        return None
    where = str(directory)
    if where not in _checked:
        _checked[where] = _is_private(directory)
    return directory if _checked[where] else None


def _is_private(directory: Path) -> bool:
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(directory)
    except OSError:
        return False  # cannot be made: no cache, nothing to say (it only saves time)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        _note(f"cache directory {directory} is not a directory of this user's: not used")
        return False
    if info.st_mode & 0o022:
        try:
            os.chmod(directory, info.st_mode & ~0o077)  # ours: make it private
        except OSError:
            _note(f"cache directory {directory} may be written by others: not used")
            return False
    return True


def _key(directory: Path) -> bytes | None:
    where = str(directory)
    if where in _keys:
        return _keys[where]
    path = directory / KEY_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        try:
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
                _note(f"cache key {path} is not private to this user: the cache is not used")
                return None
            key = path.read_bytes()
        except OSError:
            return None
    except OSError:
        return None
    else:
        key = os.urandom(32)
        with os.fdopen(fd, "wb") as handle:
            handle.write(key)
    if len(key) != 32:
        return None
    _keys[where] = key
    return key


def load(target: Path) -> bytes | None:
    """An entry's content when it verifies; None when missing (or, with a note, when not)."""
    key = _key(target.parent)
    if key is None:
        return None
    try:
        raw = target.read_bytes()
    except OSError:
        return None
    digest, data = raw[:_DIGEST], raw[_DIGEST:]
    if not hmac.compare_digest(digest, hmac.new(key, data, hashlib.sha256).digest()):
        _note(f"cache entry {target.name} did not verify (damaged, edited or not written by this "
              f"user): rebuilt")
        return None
    return data


def store(target: Path, data: bytes) -> None:
    """Write a sealed entry, readable by this user only; failing to is not an error."""
    key = _key(target.parent)
    if key is None:
        return
    try:
        # Written aside (mkstemp: mode 0600) then renamed: a concurrent reader never sees half a file.
        fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=target.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(hmac.new(key, data, hashlib.sha256).digest() + data)
            os.replace(temporary, target)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError:
        pass
