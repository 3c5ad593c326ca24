"""Generate the client packs and fixtures from the client template inventories.

    python -m rebalance_doctor.packgen.clientgen          # rewrite the generated files
    python -m rebalance_doctor.packgen.clientgen --check  # exit 1 when they are not current

Every template of ``patterns/clients/<client>.jsonl`` (made by ``client_sources``) that is not
left out on purpose (``clientgen.toml`` [[exclude]]) gets a pattern whose regex is the template
itself: its literal text escaped, a capture per placeholder shaped by the value's kind (a printf
``%d`` is digits; a ``%s`` between quotes stops at the quote), named after the events column
its source expression fills (``clientgen.toml`` fields), and the event its wording means in the
vocabulary the Java lines use (``clientgen.toml`` [[event]]). Output, reproducible byte for byte:

* patterns/packs/client-<client>.toml   the generated patterns (samples in the client's layout)
* fixtures/clients/<client>/<layout>.log each template rendered in one of the client's layouts,
                                          annotated with the pattern that must read it

``check_inventories`` is the check ``patterns check`` runs both ways: every template in scope,
rendered at every version that writes it, is read by its client's pattern with the fields it
states; every pattern of a client pack reads at least one inventory template.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

import regex

from ..core import errors
from ..core.paths import PACKAGE_ROOT, patterns_dir
from ..core.toml import load_toml
from . import envelope, eventnames
from .captures import greedy_runs, seal_free_repeats
from .render import template_parts

REPO = PACKAGE_ROOT.parent
PACK_PREFIX = "client-"
# The client packs' version (a pack's `version`): raised when what their patterns capture changes (1.1.0: the
# librdkafka leader's assignor lines name the other members as listed_member).
CLIENT_PACK_VERSION = "1.1.0"
FIXTURES = "fixtures/clients"
_SPECIAL = regex.compile(r"([.^$*+?{}\[\]\\|()])")
_MIN_GATE = 4
TS = datetime(2024, 5, 1, 13, 45, 12, 345000, tzinfo=timezone.utc)
_INT_FIELDS = {"generation", "members", "nodes", "consumers", "delay_ms"}
# Client patterns are tried after Kafka's own (hand-written at 0 and up, generated from -1000):
# kafka-python copied some of the Java client's wording, and a Java line is read as Java.
CLIENT_PRIORITY_BASE = 2000


@lru_cache(maxsize=1)
def settings() -> dict:
    return load_toml(Path(__file__).with_name("clientgen.toml"))


def clients() -> list[str]:
    return list(settings()["client"])


def inventory_path(client: str) -> Path:
    return patterns_dir() / "clients" / f"{client}.jsonl"


def load_inventory(client: str) -> list[dict]:
    with open(inventory_path(client), encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def snake(name: str) -> str:
    return regex.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in regex.findall(r"\d+", version))


@dataclass
class Template:
    client: str
    text: str
    rows: list[dict] = field(default_factory=list)

    @property
    def latest(self) -> dict:
        return max(self.rows, key=lambda r: (version_key(r["version"]), r["level"] != "DEBUG"))

    @property
    def versions(self) -> list[str]:
        return sorted({r["version"] for r in self.rows}, key=version_key)

    @property
    def facilities(self) -> list[str]:
        return sorted({r["facility"] for r in self.rows if r.get("facility")})

    @property
    def loggers(self) -> list[str]:
        return sorted({r["logger"] for r in self.rows if r.get("logger")})

    @property
    def broker_prefixed(self) -> bool:
        return any("<broker>: " in r.get("notes", "") for r in self.rows)


@dataclass
class Decision:
    template: Template
    pattern: str | None = None
    excluded: str | None = None
    literal_pattern: str | None = None   # the more specific pattern made by a `literal` rule
    # The patterns of another client's pack that read the same wording, and that client's template.
    owner: tuple[str, str | None, "Template | None"] | None = None

    @property
    def readers(self) -> tuple[str | None, str | None]:
        """(pattern, literal pattern) that read this template's lines."""
        return (self.owner[0], self.owner[1]) if self.owner else (self.pattern, self.literal_pattern)

    @property
    def stated_fields(self) -> list[str | None]:
        """The fields the reading pattern captures, in placeholder order (the owner's, when owned)."""
        owner = self.owner[2] if self.owner else None
        return fields_of(owner if isinstance(owner, Template) else self.template)

    @property
    def read_as_kafka(self) -> bool:
        """Kafka's own wording, read by Kafka's pattern (whose fields its own checks cover)."""
        return bool(self.owner) and self.owner[2] == "kafka"


def in_scope(t: Template) -> bool:
    """Whether a template tells part of the group-membership story (clientgen.toml `scope`)."""
    scope = settings()["client"][t.client].get("scope")
    return not scope or regex.search(scope, t.text + " " + " ".join(t.facilities)) is not None


def exclusion(text: str) -> str | None:
    for rule in settings().get("exclude", []):
        if regex.search(rule["match"], text):
            return rule["reason"]
    if len(gate_of(text)) < _MIN_GATE:
        return "no literal text of 4 or more characters on its first line: nothing to recognise it by"
    return None


def templates_of(client: str, rows: list[dict] | None = None) -> list[Template]:
    found: dict[str, Template] = {}
    for row in rows if rows is not None else load_inventory(client):
        found.setdefault(row["template"], Template(client, row["template"])).rows.append(row)
    return sorted(found.values(), key=lambda t: t.text)


_GENERIC_WORDS = {"partition", "partitions", "group", "member", "members", "topic", "topics", "with", "for", "the"}


def gate_of(text: str) -> str:
    """The literal a line must hold to be tried against the template's regex: its longest literal
    piece that says something (two words, or a word other than "partition(s)", "group", ...);
    a gate every noise line holds ("List with 4 partition(s):") would make each of them a near miss."""
    parts = [part.strip() for piece in template_parts(text)[0] for part in piece.split("\n") if part.strip()]
    telling = [p for p in parts if len([w for w in regex.findall(r"[A-Za-z]{3,}", p)
                                        if w.lower() not in _GENERIC_WORDS]) >= 1]
    return max(telling or parts, key=len, default="")


def fields_of(t: Template) -> list[str | None]:
    spec = settings()["client"][t.client]
    row = t.latest
    explicit = spec.get("templates", {}).get(t.text)
    count = len(template_parts(t.text)[1])
    if explicit is not None:
        return [f or None for f in explicit] + [None] * (count - len(explicit))
    keys = row.get("keys") or []
    key_fields = spec.get("keys", {})
    params = row.get("params") or []
    out: list[str | None] = []
    holes = len(params) - len(keys)
    for i in range(count):
        name = None
        if keys and i >= holes and i - holes < len(keys):
            name = key_fields.get(keys[i - holes])
        # A ternary choosing between literals (librdkafka's `... ? " (me)" : ""`) is a marker, not a value.
        if name is None and i < len(params) and not regex.search(r'\?\s*"[^"]*"\s*:', params[i]):
            for pattern, column in spec.get("fields", []):
                if regex.search(pattern, params[i]):
                    name = column
                    break
        out.append(name if name and (name in _capturable() or name in spec.get("objects", {}))
                   else (snake(name) if name else None))
    return out


@lru_cache(maxsize=1)
def _capturable() -> frozenset[str]:
    from ..core.schema import CAPTURE_COLUMNS
    return CAPTURE_COLUMNS


def event_of(t: Template) -> dict:
    for rule in settings().get("event", []):
        if rule.get("clients") and t.client not in rule["clients"]:
            continue
        if rule.get("facility") and rule["facility"] not in t.facilities:
            continue
        if rule.get("match") and not regex.search(rule["match"], t.text):
            continue
        return rule
    return {"event": f"{snake(t.client)}.{_family(t)}"}


def types_of(t: Template) -> list[str]:
    row = t.latest
    count = len(template_parts(t.text)[1])
    types = list(row.get("types") or [])
    return (types + ["text"] * count)[:count]


def regex_of(t: Template, fields: list[str | None], literal: dict[str, str] | None = None) -> str:
    pieces, braced = template_parts(t.text)
    types = types_of(t)
    spec = settings()["client"][t.client]
    multiline = "\n" in t.text
    json_tail = bool(t.latest.get("keys")) and t.client == "kafkajs"
    captures = spec.get("captures", {})
    out = []
    seen: set[str] = set()
    wide = None   # the previous placeholder's fragment when a free repeat: (index in out, body, captured)
    for i, piece in enumerate(pieces):
        last_piece = i == len(pieces) - 1
        out.append(_escape(piece.rstrip(" ") if last_piece else piece, optional_period=last_piece))
        if last_piece:
            break
        name = fields[i]
        if literal and name in literal:
            out.append("(?:" + "|".join(_SPECIAL.sub(r"\\\1", v) for v in _alternatives(literal[name])) + ")")
            wide = None
            continue
        rest_empty = not "".join(pieces[i + 1:]).strip()   # only placeholders (or nothing) follow
        if name in spec.get("objects", {}):
            out.append(f"(?:{spec['objects'][name]['capture']})")   # names its own groups
            wide = None
            continue
        if name in captures:
            body = captures[name]
        elif name == "error" and spec.get("error_capture") and not rest_empty:
            body = spec["error_capture"]
        elif name in _ID_FIELDS and name not in seen and types[i] == "text" and not _quoted(piece, pieces[i + 1]):
            # Ids hold no spaces: a capture that stops at one keeps a line of other wording
            # ("Successfully joined group with generation") from reading as this one.
            # (greedy, ending on no punctuation: a lazy \S+? trips the regex module's partial
            # matching, which `patterns test` uses to say how far the closest pattern got)
            id_body = "\\S*[^\\s.,;:]"
            body = f"(?:{id_body})?" if name in ("member", "leader") else id_body
        else:
            body = _capture_body(types[i], piece, pieces[i + 1], last=rest_empty and not json_tail, multiline=multiline,
                                 adjacent=(pieces[i + 1] == "" and i + 1 < len(braced) and not rest_empty))
        if braced[i]:
            body = "\\{" + body + "\\}"
        quote = '"' if types[i] == "quoted" else ""   # Go's %q: the value between quotes
        if quote:
            body = '[^"\\n]*'
        captured = bool(name and name not in seen)
        if not captured and not quote and piece == "" and wide is not None and body in _WIDE:
            # "%s%s": two free repeats side by side backtrack catastrophically (patterns check
            # rejects them) and read no more than one: keep the wider, uncaptured, once.
            at, before, before_captured = wide
            if _WIDE[body] <= _WIDE[before] and (not before_captured or before == ".*"):
                continue
            if _WIDE[before] <= _WIDE[body] and not before_captured:
                out[at] = f"(?:{body})"
                wide = (at, body, False)
                continue
        if captured:
            seen.add(name)
            out.append(f"{quote}(?P<{name}>{body}){quote}")
        else:
            out.append(f"{quote}(?:{body}){quote}")
        wide = (len(out) - 1, body, captured) if body in _WIDE and not quote and not braced[i] else None
    head = "^" + spec.get("body_prefix", "") + ("(?:\\S+: )?" if t.broker_prefixed else "")
    tail = ""
    keys = t.latest.get("keys") or []
    if keys and t.client == "kafkajs":
        # KafkaJS's extra keys follow the message as one JSON object (the kafkajs-json layout).
        # A spread (`{ ...payload }`) hides which keys the line carries: each key the client's lines are known to
        # use is read where present (each look optional on its own), none is required.
        spread = any(k.startswith("...") for k in keys)
        named = [k for k in keys if not k.startswith("...")]
        if spread:
            named += [k for k in spec.get("keys", {}) if k not in named]
        looks = []
        for key in named:
            column = spec.get("keys", {}).get(key)
            if column and column not in seen:
                seen.add(column)
                look = f'(?=.*?"{regex.escape(key)}":(?:"(?P<{column}>(?:[^"\\\\]|\\\\.)*)"|(?P<{column}>-?\\d+)))'
                looks.append(f"(?:{look})?" if spread else look)
        tail = "(?: (?:" + "".join(looks) + ")?\\{(?>.*\\}))?"   # to the last "}" (as .* would), once
    return head + "".join(out) + tail + "\\s*(?:\\n[\\s\\S]*)?$"


_ID_FIELDS = {"group", "member", "leader", "instance", "client"}
# Free repeats a placeholder may read, by what they can match (a larger number reads all a smaller
# one reads): a token, a line, any text.
_WIDE = {"[^\\s,;]*": 1, ".*?": 2, ".*": 2, "[\\s\\S]*?": 3}


def _quoted(before: str, after: str) -> bool:
    return any(before.endswith(q) and after.startswith(q) for q in "\"'`")


def _alternatives(value) -> list[str]:
    return list(value) if isinstance(value, list) else [value]


def _capture_body(kind: str, before: str, after: str, last: bool, multiline: bool, adjacent: bool = False) -> str:
    if kind == "int":
        return "-?\\d+"
    if kind == "float":
        return "-?\\d+(?:\\.\\d+)?(?:[eE][-+]?\\d+)?"
    if kind == "hex":
        return "(?:0x)?[0-9a-fA-F]+"
    for quote in "\"'`":
        if before.endswith(quote) and after.startswith(quote):
            return f"[^{quote}\\n]*"
    if adjacent:  # "LeaderId {}{}": a token, then whatever the next value adds (" (me)")
        return "[^\\s,;]*"
    if last:
        return "[\\s\\S]*?" if multiline else ".*"
    return "[\\s\\S]*?" if multiline else ".*?"


def _escape(text: str, optional_period: bool = False) -> str:
    period = optional_period and text.endswith(".") and not text.endswith("..")
    if period:
        text = text[:-1]
    text = _SPECIAL.sub(r"\\\1", text)
    text = text.replace("\n", "\\n").replace("\t", "\\t").replace("'", "\\x27")
    text = regex.sub(r"(?: |\\t)+", lambda m: "\\s+" if len(m.group()) > 1 else m.group(), text)
    return text + ("\\.?" if period else "")


# ---------------------------------------------------------------------------------------------
# rendering: the values a template is filled with, and the line each client layout writes


def values_of(t: Template, fields: list[str | None], literal: dict[str, str] | None = None
              ) -> tuple[list[str], dict[str, object]]:
    spec = settings()["client"][t.client]
    sample = spec.get("sample", {})
    types = types_of(t)
    pieces, _ = template_parts(t.text)
    values, stated = [], {}
    for i, name in enumerate(fields):
        kind = types[i]
        if name in spec.get("objects", {}):
            value = spec["objects"][name]["sample"]
            for key, want in spec["objects"][name].get("stated", {}).items():
                stated.setdefault(key, want)
        elif literal and name in literal:
            value = _alternatives(literal[name])[0]
        elif name in sample:
            value = str(sample[name])
        elif i > 0 and pieces[i] == "" and name is None and kind == "text":
            value = ""   # a marker right after another value (" (me)"), often empty
        elif kind == "int":
            value = "7"
        elif kind == "float":
            value = "1.5"
        elif kind == "hex":
            value = "0x1f"
        elif name == "from_state":
            value = "init"
        elif name == "state":
            value = "up"
        else:
            value = "value"
        if kind == "int" and not regex.fullmatch(r"-?\d+", value):
            value = "7"
        after = pieces[i + 1]
        for quote in "\"'`":
            if pieces[i].endswith(quote) and after.startswith(quote):
                value = value.replace(quote, "")
        values.append(f'"{value}"' if kind == "quoted" else value)
        # a column, or an attribute the client's sample table gives a value for (attrs.listed_member): checked
        if name and (name in _capturable() or name in sample) and name not in stated:
            if name in _INT_FIELDS:
                stated[name] = int(value)
            elif name in ("partitions", "tasks"):
                continue
            elif name == "error":
                canonical = errors.kafka_name(value)
                if canonical != "NO_ERROR":
                    stated[name] = canonical or value.strip()
            else:
                stated[name] = value.strip()
    if "group" not in stated and sample.get("group") and "groupId" in (t.latest.get("keys") or []):
        stated["group"] = sample["group"]
    return values, stated


def fill(text: str, values: list[str]) -> str:
    pieces, braced = template_parts(text)
    out = [pieces[0]]
    for i, piece in enumerate(pieces[1:]):
        value = values[i] if i < len(values) else ""
        out.append("{" + value + "}" if braced[i] else value)
        out.append(piece)
    return "".join(out)


def message_of(t: Template, values: list[str]) -> str:
    body = fill(t.text, values)
    spec = settings()["client"][t.client]
    if t.client == "kafkajs":
        extra = {}
        for key in t.latest.get("keys") or []:
            column = spec.get("keys", {}).get(key)
            if column and column in spec.get("sample", {}):
                value = spec["sample"][column]
                extra[key] = int(value) if column in _INT_FIELDS else value
        return body, extra
    if t.broker_prefixed:
        body = "GroupCoordinator/1: " + body
    return body, {}


def render_line(t: Template, layout: str, values: list[str], level: str | None = None, row: dict | None = None) -> str:
    row = row or t.latest
    body, extra = message_of(t, values)
    level = level or row["level"]
    client = settings()["client"][t.client].get("sample", {}).get("client", "rdkafka#consumer-1")
    facility = row.get("facility") or "CGRP"
    logger = row.get("logger") or t.client
    if t.client == "librdkafka":
        return envelope.render_client(layout, TS, level, facility, body, "main", client=client)
    if t.client == "kafkajs":
        return envelope.render_client(layout, TS, level, logger, body, None, extra=extra)
    return envelope.render_client(layout, TS, level, logger, body, "<0.1560.0>" if t.client == "brod" else None)


# ---------------------------------------------------------------------------------------------


OUT_OF_SCOPE = "out of scope: not about the group's membership (clientgen.toml scope)"


def decide(client: str, rows: list[dict] | None = None,
           owners: dict[str, tuple] | None = None) -> list[Decision]:
    """``owners``: wording already given a pattern by a client earlier in clientgen.toml (aiokafka
    is kafka-python's port, faust-streaming faust's fork: the same text is one pattern)."""
    decisions = []
    used: set[str] = set()
    for t in templates_of(client, rows):
        reason = exclusion(t.text) or (None if in_scope(t) else OUT_OF_SCOPE)
        if reason:
            decisions.append(Decision(t, excluded=reason))
            continue
        if owners and t.text in owners:
            decisions.append(Decision(t, owner=owners[t.text]))
            continue
        base = f"{snake(client)}.{_family(t)}.{_slug(t.text)}"
        pattern_id, n = base, 2
        while pattern_id in used:
            pattern_id, n = f"{base}_{n}", n + 1
        used.add(pattern_id)
        decision = Decision(t, pattern=pattern_id)
        literal = event_of(t).get("literal")
        if literal and all(name in fields_of(t) for name in literal):
            decision.literal_pattern = pattern_id + "_ok"
            used.add(decision.literal_pattern)
        decisions.append(decision)
    return decisions


def _family(t: Template) -> str:
    if t.facilities:
        return snake(t.facilities[0])
    return snake(regex.sub(r"\.\w+$", "", t.latest["file"]).rsplit("/", 1)[-1])


def _slug(text: str) -> str:
    words = regex.findall(r"[A-Za-z][A-Za-z0-9]*", text.replace("{}", " "))
    return "_".join(w.lower() for w in words[:6])[:48] or "line"


def toml_str(text: str) -> str:
    if "'" not in text and not any(ord(c) < 32 or c == "\x7f" for c in text):
        return f"'{text}'"
    return json.dumps(text, ensure_ascii=False)


def _pattern_toml(pattern_id: str, t: Template, event: str, constants: dict, literal: dict | None,
                  priority: int, layout: str) -> str:
    fields = fields_of(t)
    source = seal_free_repeats(greedy_runs(regex_of(t, fields, literal)))
    values, stated = values_of(t, fields, literal)
    stated.update({k: v for k, v in constants.items() if k in _capturable()})
    for name in literal or {}:
        stated.pop(name, None)
    sample = render_line(t, layout, values)
    doc = f"{t.client} {t.versions[0]}-{t.versions[-1]} ({', '.join(t.facilities or t.loggers) or t.latest['file']}): " \
          f"{t.text.splitlines()[0][:140]}"
    out = [f'\n[patterns."{pattern_id}"]\nevent = "{event}"\ngate = {toml_str(gate_of(t.text))}\n'
           f"doc = {toml_str(doc)}\npriority = {priority}\n"]
    if constants:
        out.append("set = { " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in constants.items()) + " }\n")
    expect = ", ".join(f"{k} = {json.dumps(v, ensure_ascii=False)}" for k, v in stated.items())
    out.append(f'[[patterns."{pattern_id}".variants]]\n'
               f"logger = {json.dumps(t.facilities or t.loggers)}\nregex = {toml_str(source)}\n"
               f"samples = [{{ line = {toml_str(sample)}, expect = {{ {expect} }} }}]\n")
    return "".join(out)


def build() -> tuple[dict[str, str], dict[str, list[Decision]]]:
    """The generated files (path -> text) and the decisions per client.

    A template whose lines another generated pattern already reads with every field (two
    versions' wordings that one regex takes both) is given to that pattern: one round of
    reading every rendering with the generated packs, then the files are made again."""
    files, decisions = _build_once({}, set())
    shadowed, forced = _shadowed(files, decisions)
    if shadowed or forced:
        files, decisions = _build_once(shadowed, forced)
    files["docs/clients.md"] = coverage_doc(decisions)
    return files, decisions


def _build_once(shadowed: dict[str, tuple], forced: set[str]):
    files: dict[str, str] = {}
    all_decisions: dict[str, list[Decision]] = {}
    owners: dict[str, tuple] = {}
    for client in clients():
        spec = settings()["client"][client]
        decisions = decide(client, owners={**owners, **shadowed})
        all_decisions[client] = decisions
        for d in decisions:
            if d.pattern:
                owners.setdefault(d.template.text, (d.pattern, d.literal_pattern, d.template))
        layout = spec["layouts"][0]
        parts = []
        for d in decisions:
            if d.pattern is None:
                continue
            t = d.template
            rule = event_of(t)
            size = len("".join(template_parts(t.text)[0]))
            # A line another pack's pattern reads without all its fields is tried first here.
            base = 0 if t.text in forced else CLIENT_PRIORITY_BASE
            constants = dict(rule.get("set", {}))
            if d.literal_pattern:
                parts.append(_pattern_toml(d.literal_pattern, t, rule["literal_event"], constants, rule["literal"],
                                           size + 1 - base, layout))
            parts.append(_pattern_toml(d.pattern, t, rule["event"], constants, None, size - base, layout))
        header = (f"# GENERATED by `python -m rebalance_doctor.packgen.clientgen` from patterns/clients/{client}.jsonl\n"
                  f"# (the {client} template inventory). Do not edit by hand: change clientgen.toml and regenerate.\n"
                  f'pack = "{PACK_PREFIX}{client}"\nversion = "{CLIENT_PACK_VERSION}"\ncomponent = "{spec["component"]}"\n'
                  f'library = "{spec["library"]}"\n'
                  + (f'loggers = {json.dumps(spec["loggers"])}\n' if spec.get("loggers") else "")
                  + f'scan = {json.dumps(spec["scan"])}\n')
        files[f"patterns/packs/{PACK_PREFIX}{client}.toml"] = header + "".join(parts)
        for fixture_layout in spec["layouts"]:
            files[f"{FIXTURES}/{client}/{fixture_layout}.log"] = _fixture(client, decisions, fixture_layout)
    return files, all_decisions


def _shadowed(files: dict[str, str], decisions: dict[str, list[Decision]]
              ) -> tuple[dict[str, tuple], set[str]]:
    import tempfile

    from .check import Reader, outcome
    from .render import Rendered

    found: dict[str, tuple] = {}
    forced: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp:
        paths = [p for p in (patterns_dir() / "packs").glob("*.toml") if not p.name.startswith(PACK_PREFIX)]
        for rel, text in files.items():
            if rel.endswith(".toml"):
                path = Path(tmp) / Path(rel).name
                path.write_text(text, encoding="utf-8")
                paths.append(path)
        reader = Reader(pack_dirs=paths, include_default=False)
    for client, ds in decisions.items():
        layout = settings()["client"][client]["layouts"][0]
        for d in ds:
            if d.pattern is None or d.literal_pattern:
                continue
            (pattern, line), = renderings(d, layout)
            _, stated = values_of(d.template, fields_of(d.template))
            got, problems = outcome(reader, Rendered(None, layout, line, line, stated))
            kafkas = got is not None and got.split(".")[0] not in {snake(c) for c in clients()}
            # (a Kafka pattern that misses a field the line states is not Kafka's wording: only
            # the client's way of writing an error may differ)
            kafkas = kafkas and all(p.startswith("error:") for p in problems)
            if got and got != pattern and (not problems or kafkas):
                # Kafka's own wording (aiokafka and sarama copied some of the Java client's lines)
                # is read as Kafka's, whatever a client's version of its values looks like.
                found[d.template.text] = (got, None, "kafka" if kafkas else None)
            elif got and got != pattern:
                forced.add(d.template.text)
    return found, forced


def _fixture(client: str, decisions: list[Decision], layout: str) -> str:
    lines = [f"# generated by `python -m rebalance_doctor.packgen.clientgen`: every {client} template of the",
             f"# inventory in scope, rendered in the {layout} layout, annotated with the pattern that reads it."]
    for d in decisions:
        for pattern, line in renderings(d, layout):
            lines.append(f"#expect: {pattern}")
            lines.append(line)
    return "\n".join(lines) + "\n"


def _literal_values(value) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def renderings(d: Decision, layout: str, row: dict | None = None) -> list[tuple[str, str]]:
    """(pattern that must read it, line) for a template in scope: with a `literal` rule, the line
    with the literal value and a line with another value."""
    pattern, literal_pattern = d.readers
    if pattern is None:
        return []
    t = d.template
    fields = fields_of(t)
    rule = event_of(t)
    literal = rule.get("literal") if literal_pattern else None
    out = []
    if literal:
        values, _ = values_of(t, fields, literal)
        out.append((literal_pattern, render_line(t, layout, values, row=row)))
    values, _ = values_of(t, fields)
    if literal:
        # Another value than the literal: the client's own sample value (its wording), unless that is the literal.
        sample = settings()["client"].get(t.client, {}).get("sample", {})
        def other(field: str) -> str:
            mine = str(sample.get(field) or "")
            return mine if mine and mine not in _literal_values(literal.get(field)) else "Broker: Unknown member"
        values = [other(f) if f in literal else v for f, v in zip(fields, values)]
    out.append((pattern, render_line(t, layout, values, row=row)))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the generated files are not current")
    args = parser.parse_args(argv)
    files, decisions = build()
    from .packgen import write_generated

    stale = write_generated(files, REPO, check_only=args.check)
    if eventnames.write(check_only=args.check):  # the registry follows the packs just written
        stale.append(eventnames.TARGET)
    for client, ds in decisions.items():
        kept = sum(1 for d in ds if d.pattern)
        print(f"{client}: {len(ds)} templates, {kept} with a pattern, {len(ds) - kept} left out", file=sys.stderr)
    if args.check and stale:
        print("not current: " + ", ".join(stale) + " (run python -m rebalance_doctor.packgen.clientgen)", file=sys.stderr)
        return 1
    return 0



def unscanned(client: str) -> list[str]:
    """In-scope templates whose rendered line holds none of the scan literals (of any pack: the
    scanner looks for them all)."""
    from ..core.packs import load_packs

    scan = set(load_packs().scan_keys)
    layout = settings()["client"][client]["layouts"][0]
    out = []
    for d in decide(client):
        for _, line in renderings(d, layout):
            if not any(k in line for k in scan):
                out.append(d.template.text)
    return out


def coverage_doc(decisions: dict[str, list[Decision]]) -> str:
    """docs/clients.md: per client and release, the inventory's templates, those in scope and
    those a pattern reads (the fixtures under fixtures/clients/ prove each one, per layout)."""
    out = ["# Non-Java clients: template inventories and pattern coverage", "",
           "Generated by `python -m rebalance_doctor.packgen.clientgen` (checked by tests/test_clients.py); do not edit.", "",
           "Each client's inventory (`patterns/clients/<client>.jsonl`) lists every log call of its group-membership",
           "code at the releases read, taken from its sources by `python -m rebalance_doctor.packgen.client_sources`",
           "(templates and metadata only, never code). The packs `patterns/packs/client-<client>.toml` are generated",
           "from it; every template in scope is rendered in each layout the client writes",
           "(`fixtures/clients/<client>/<layout>.log`) and read through the whole parsing path by `patterns check`.",
           "librdkafka (confluent-kafka), kafka-python, aiokafka, KafkaJS, franz-go, sarama and kafka-go also run in",
           "the lab against real brokers (docs/lab.md); what the diagnosis concludes from their lines, per library and",
           "failure mode, is in [client-diagnosis.md](client-diagnosis.md). The others (faust, brod, ruby-kafka, .NET)",
           "are inventory-only: their formats come from their sources, not from a running client.", "",
           *coverage_table(decisions)]
    reasons: dict[str, set[str]] = {}
    for client, ds in decisions.items():
        for d in ds:
            if d.excluded:
                reasons.setdefault(d.excluded, set()).add(client)
    out += ["", "## Left out on purpose", "", "| clients | why |", "|---|---|"]
    for reason, names in sorted(reasons.items()):
        out.append(f"| {', '.join(sorted(names))} | {reason} |")
    return "\n".join(out) + "\n"


def coverage_table(decisions: dict[str, list[Decision]]) -> list[str]:
    """Per client and release: the inventory's templates, those in scope, those a pattern reads
    (docs/clients.md, and docs/patterns.md beside Kafka's own)."""
    out = ["| client | release | templates | in scope | read by a pattern | left out on purpose |",
           "|---|---|---|---|---|---|"]
    for client, ds in decisions.items():
        by_version: dict[str, list[Decision]] = {}
        for d in ds:
            for version in d.template.versions:
                by_version.setdefault(version, []).append(d)
        for version in sorted(by_version, key=version_key):
            vs = by_version[version]
            scope = [d for d in vs if not d.excluded]
            read = [d for d in scope if d.readers[0]]
            pct = f"{100 * len(read) / len(scope):.1f}%" if scope else "-"
            out.append(f"| {client} | {version} | {len(vs)} | {len(scope)} | {pct} ({len(read)}/{len(scope)}) | "
                       f"{len(vs) - len(scope)} |")
    return out


def check_inventories() -> list[tuple[str, str]]:
    """What `patterns check` reports about the client packs, both ways: (where, message) pairs.

    * every template of every client inventory in scope, rendered at each release that writes it
      (its level and facility or logger there), is read by the pattern it was given, with the
      fields it states;
    * every pattern of a client pack (a pack with ``library``) reads some inventory template;
    * the generated packs, fixtures and docs/clients.md are current.
    """
    from ..core.packs import load_packs
    from .check import Reader, outcome
    from .render import Rendered

    findings: list[tuple[str, str]] = []
    files, decisions = build()
    for rel, text in files.items():
        path = REPO / rel
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            findings.append((rel, "not current with the client inventories: run python -m rebalance_doctor.packgen.clientgen"))
    packs = load_packs()
    reader = Reader(packs=packs)
    readers: set[str] = set()
    for client, ds in decisions.items():
        layout = settings()["client"][client]["layouts"][0]
        where = f"patterns/clients/{client}.jsonl"
        for d in ds:
            if d.excluded:
                continue
            readers.update(p for p in d.readers if p)
            fields = d.stated_fields
            for row in d.template.rows:
                for pattern, line in renderings(d, layout, row=row):
                    literal = event_of(d.template).get("literal") if pattern == d.readers[1] else None
                    _, stated = values_of(d.template, fields, literal)
                    for name in literal or {}:
                        stated.pop(name, None)
                    got, problems = outcome(reader, Rendered(None, layout, line, line, stated))
                    if d.read_as_kafka:
                        problems = []
                    if got != pattern or problems:
                        findings.append((f"{where}: {row['version']} {row['file']}:{row['line']}",
                                         f"{d.template.text[:100]!r} is read as {got or 'nothing'}, not {pattern}"
                                         + (f" ({'; '.join(problems)})" if problems else "")))
    for pattern in packs.patterns.values():
        if pattern.variants[0].library and pattern.id not in readers:
            findings.append((pattern.source_file, f"{pattern.id} reads no template of the client inventories"))
    return findings


if __name__ == "__main__":
    raise SystemExit(main())
