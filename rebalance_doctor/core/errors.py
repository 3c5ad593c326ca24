"""Kafka's protocol errors as the non-Java clients write them, to their Kafka names.

librdkafka writes ``Broker: Unknown member``, kafka-python ``UnknownMemberIdError`` or
``[Error 25] UnknownMemberIdError: ...``, kafka-go ``[25] Unknown Member ID: ...``, brod the atom
``unknown_member_id``; the Java
client and the rules say ``UNKNOWN_MEMBER_ID``. The tables (``patterns/clients/errors.toml``) are
data taken from the clients' sources by ``packgen/client_sources.py``, TOML so that the Spark
engine ships it with the packs.
"""

from __future__ import annotations

from functools import lru_cache

import regex

from .paths import patterns_dir
from .toml import DataFileError, load_toml

_CODE = regex.compile(r"^\[(?:Error )?(\d+)\]")
_CLASS = regex.compile(r"\b([A-Z]\w*Error)\b")
_KAFKA_NAME = regex.compile(r"\b([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)\b")
_ATOM = regex.compile(r"^([a-z][a-z0-9]*(?:_[a-z0-9]+)+)$")   # brod (Erlang) writes the error as an atom


@lru_cache(maxsize=1)
def _tables() -> dict[str, dict[str, str]]:
    path = patterns_dir() / "clients" / "errors.toml"
    try:
        return load_toml(path)
    except (OSError, DataFileError):
        return {}


@lru_cache(maxsize=4096)
def kafka_name(text: str | None) -> str | None:
    """The Kafka name of the protocol error a client's error text states, or None. Cached: a flood of one line
    (a Streams thread's "Request joining group due to: Shutdown requested", millions of times) asks it once per
    event about the same few texts."""
    if not text:
        return None
    tables = _tables()
    text = text.strip()
    found = tables.get("descriptions", {}).get(text)
    if found:
        return found
    m = _CODE.match(text)
    if m and m[1] in tables.get("codes", {}):
        return tables["codes"][m[1]]
    for name in _CLASS.findall(text):
        if name in tables.get("classes", {}):
            return tables["classes"][name]
    for description, name in tables.get("descriptions", {}).items():
        if text.startswith(description):
            return name
    m = _KAFKA_NAME.search(text)   # franz-go's "UNKNOWN_MEMBER_ID: The coordinator is not aware..."
    if m and m[1] in tables.get("codes", {}).values():
        return m[1]
    m = _ATOM.match(text)          # brod's "unknown_member_id"
    if m and m[1].upper() in tables.get("codes", {}).values():
        return m[1].upper()
    return None
