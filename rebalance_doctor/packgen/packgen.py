"""Generate the inventory packs and fixtures from the Kafka template inventory.

    python -m rebalance_doctor.packgen.packgen          # rewrite the generated files
    python -m rebalance_doctor.packgen.packgen --check  # exit 1 when they are not current

The hand-written packs (patterns/packs/{broker,consumer,streams,connect}.toml) come first:
every in-scope template is rendered (renderer: render.py) and read with them; a template they
recognise with the right fields keeps its hand-written pattern. Every other template gets a
generated pattern whose regex is the template itself with a named group per placeholder (the
field comes from the source expression that fills it: params.toml). Templates of one class
whose wording changed between versions (disjoint versions, similar text) become variants of
one id. Output, reproducible byte for byte:

* patterns/packs/inventory-<component>.toml   the generated patterns
* fixtures/packs/inventory-<component>.log    one rendered line per template, annotated with
                                              the pattern id that must recognise it
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path

import regex

from ..core.paths import PACKAGE_ROOT, patterns_dir
from ..core.schema import CAPTURE_COLUMNS
from ..core.toml import load_toml
from .check import Reader, outcome
from .inventory import COMPONENTS, REPORTED_LEVELS, VERSIONS, Row, default_path, load_rows, version_key
from . import captures, eventnames
from .params import Slot
from .render import Rendered, prefix_of, render, slots, template_parts

HAND_PACKS = ("broker", "consumer", "streams", "connect")
GENERATED_PREFIX = "inventory-"
REPO = PACKAGE_ROOT.parent
_SPECIAL = regex.compile(r"([.^$*+?{}\[\]\\|()])")
_MIN_GATE = 6
# The generated packs' version: bumped when what their patterns mean changes (1.1.0: arguments read
# per their Java/Scala types, lifecycle events named; 1.2.0: attrs.group_type set on broker lines, replication
# factor and registered brokers captured from Streams topic statuses; 1.3.0: only a member's state machine is a
# member.epoch_transition, not a Streams task "transitioned to active in a followup rebalance").
GENERATED_VERSION = "1.4.0"


@dataclass
class Template:
    """One distinct template text of one class, with every row (version) that writes it."""

    component: str
    cls: str
    template: str
    rows: list[Row] = field(default_factory=list)

    @property
    def versions(self) -> list[str]:
        return sorted({r.version for r in self.rows}, key=version_key)

    @property
    def loggers(self) -> list[str]:
        return sorted({r.logger for r in self.rows})

    @property
    def components(self) -> list[str]:
        return [c for c in COMPONENTS if any(r.component == c for r in self.rows)]

    def latest_of(self, component: str) -> Row:
        return max((r for r in self.rows if r.component == component),
                   key=lambda r: (version_key(r.version), r.level != "DEBUG"))

    @property
    def latest(self) -> Row:
        return self.latest_of(self.component)


@dataclass
class Decision:
    template: Template
    pattern: str | None = None       # the pattern id that must recognise it
    excluded: str | None = None      # why it is left out on purpose
    generated: bool = False
    priority: int = 0                # 1: a hand-written pattern reads the line, but not all its fields


def settings() -> dict:
    return load_toml(Path(__file__).with_name("packgen.toml"))


def in_scope(row: Row, data: dict) -> bool:
    if row.level in REPORTED_LEVELS:
        return True
    return row.level == "DEBUG" and regex.search(data["debug_keep"], row.template) is not None


def spelled_out_templates(all_templates: list[Template]) -> set[str]:
    return {r.variant_of for t in all_templates for r in t.rows if r.variant_of}


def exclusion(template: str, data: dict, spelled_out: set[str] = frozenset(),
              classes: "frozenset[str] | set[str]" = frozenset()) -> str | None:
    """Why a template is left out on purpose, or None. A rule with a ``class`` regex holds only for
    a template some class matching it writes."""
    if template in spelled_out:
        return ("a ternary of two literals fills one placeholder: the inventory's variant rows spell out "
                "both forms, and those are what Kafka prints and what the patterns read")
    for rule in data.get("exclude", []):
        if "class" in rule and not any(regex.search(rule["class"], c) for c in classes):
            continue
        if regex.search(rule["match"], template):
            return rule["reason"]
    if len(_longest_literal(template)) < 4:
        return "no literal text of 4 or more characters: nothing to recognise it by"
    return None


def templates(rows: list[Row], data: dict) -> list[Template]:
    # Keyed by text: one wording is one variant, whichever classes write it (Connect's
    # WorkerCoordinator logs AbstractCoordinator's lines; the rebalance-listener invoker repeats
    # ConsumerCoordinator's), each with its own prefix and logger.
    found: dict[str, Template] = {}
    for row in sorted(rows, key=lambda r: (COMPONENTS.index(r.component), r.cls)):
        if not in_scope(row, data):
            continue
        key = row.template
        found.setdefault(key, Template(row.component, row.cls, row.template)).rows.append(row)
    return list(found.values())


def decide(all_templates: list[Template], data: dict, forced: frozenset[str] = frozenset(),
           absorbed: dict[str, str] | None = None) -> list[Decision]:
    hand = Reader(pack_dirs=[patterns_dir() / "packs" / f"{name}.toml" for name in HAND_PACKS],
                  include_default=False)
    spelled_out = spelled_out_templates(all_templates)
    decisions = []
    for t in all_templates:
        reason = exclusion(t.template, data, spelled_out, {r.cls for r in t.rows})
        if reason:
            decisions.append(Decision(t, excluded=reason))
            continue
        # A line a hand-written pattern reads stays with it (wrong fields are that pattern's
        # bug, shown by the coverage test); only lines no hand-written pattern reads get one.
        if absorbed and t.template in absorbed:
            decisions.append(Decision(t, pattern=absorbed[t.template]))
            continue
        if t.template in forced:
            decisions.append(Decision(t, generated=True, priority=1))
            continue
        results = [outcome(hand, render(r)) for r in t.rows]
        patterns = {p for p, _ in results}
        if len(patterns) == 1 and None not in patterns and not any(problems for _, problems in results):
            decisions.append(Decision(t, pattern=patterns.pop()))
        else:
            # Read by none, or not with every field: a pattern of its own, tried before the
            # hand-written ones when one of those also reads the line.
            decisions.append(Decision(t, generated=True, priority=1 if patterns - {None} else 0))
    return decisions


def event_for(t: Template, data: dict) -> str:
    rule = _event_rule(t, data)
    return rule["event"] if rule else f"{t.component}.{_snake(t.cls)}"


def constants_for(t: Template, data: dict) -> dict[str, str]:
    """The fields the event rule of a template sets (its ``set``), with those of every ``constant`` rule that
    applies to it: what the line says by its wording (or the class that writes it) alone."""
    rule = _event_rule(t, data)
    found = dict(rule.get("set") or {}) if rule else {}
    for constant in data.get("constant", []):
        if constant.get("component") not in (None, t.component):
            continue
        if constant.get("class") and not regex.search(constant["class"], t.cls):
            continue
        if regex.search(constant["match"], t.template):
            found.update(constant["set"])
    return found


def _event_rule(t: Template, data: dict) -> dict | None:
    for rule in data.get("event", []):
        if rule.get("component") not in (None, t.component):
            continue
        if regex.search(rule["match"], t.template):
            return rule
    return None


def cluster(generated: list[Template]) -> list[list[Template]]:
    """Templates of one class whose wording changed between versions: one id, several variants."""
    by_class: dict[tuple[str, str], list[Template]] = defaultdict(list)
    for t in generated:
        by_class[(t.component, t.cls)].append(t)
    groups: list[list[Template]] = []
    for key in sorted(by_class):
        members = sorted(by_class[key], key=lambda t: (version_key(t.versions[0]), t.template))
        local: list[list[Template]] = []
        for t in members:
            home = None
            for group in local:
                if any(set(t.versions) & set(o.versions) for o in group):
                    continue
                last = group[-1].template
                if (difflib.SequenceMatcher(None, last, t.template).ratio() >= 0.8
                        and len(_common_gate([*group, t])) >= _MIN_GATE):
                    home = group
                    break
            if home is None:
                local.append([t])
            else:
                home.append(t)
        groups.extend(local)
    return groups


def _longest_literal(template: str) -> str:
    pieces, _ = template_parts(template)
    return max((p.strip() for p in pieces), key=len, default="")


def _common_gate(group: list[Template]) -> str:
    gate = _longest_literal(group[0].template)
    if len(group) == 1:
        return _first_line(gate)
    candidates = []
    for piece in template_parts(group[0].template)[0]:
        piece = _first_line(piece.strip())
        for other in group[1:]:
            best = ""
            for other_piece in template_parts(other.template)[0]:
                m = difflib.SequenceMatcher(None, piece, other_piece, autojunk=False).find_longest_match(
                    0, len(piece), 0, len(other_piece))
                if m.size > len(best):
                    best = piece[m.a:m.a + m.size]
            piece = best
        candidates.append(piece.strip())
    return max(candidates, key=len, default="")


def _literal_size(template: str) -> int:
    return len("".join(template_parts(template)[0]))


def _first_line(text: str) -> str:
    return max(text.split("\n"), key=len).strip("\t ") if "\n" in text else text


def variant_regex(t: Template) -> str:
    row = t.latest
    row_slots = slots(row)
    # Classes and versions that write the same text may fill a placeholder with values of
    # another shape: there the capture takes any text; of another type: any of the types.
    alternatives: list[list[Slot]] = [[s] for s in row_slots]
    for other in t.rows:
        for i, slot in enumerate(slots(other)[:len(row_slots)]):
            mine = row_slots[i]
            if slot.kind != mine.kind and mine.kind not in ("text", "any", "error", "generation"):
                row_slots[i] = replace(mine, kind="any", type=None)
                alternatives[i] = [row_slots[i]]
            elif slot.type != mine.type and all(a.kind == mine.kind for a in alternatives[i]):
                alternatives[i].append(replace(mine, type=slot.type))
    head = "(?s)^" if "\n" in t.template or any("\n" in s.value for s in row_slots) else "^"
    if row.kind == "composed" and row.base_template and row.reason_template is not None:
        # The reason Kafka passed in is captured whole; what it names (member, state, the
        # client's own reason) gets groups of its own inside it.
        base_pieces, base_braced = template_parts(row.base_template)
        before = len(base_braced) - 1
        inner = [[replace(s, field="client_reason") if s.field == "reason" else s for s in alts]
                 for alts in alternatives[before:]]
        reason = _join(*template_parts(row.reason_template), inner, tail_open=False)
        outer = alternatives[:before] + [None]
        body = _join(base_pieces, base_braced, outer, tail_open=True, hole=f"(?P<reason>{reason})")
    else:
        body = _join(*template_parts(t.template), alternatives, tail_open=True)
    # A record may go on after the message: the stack trace of a Throwable argument, or lines
    # a layout did not split off. The message must match whole; what follows it may be anything.
    return captures.temper_ids(captures.seal_free_repeats(captures.greedy_runs(
        head + body.rstrip(" ") + r"\s*(?:\n[\s\S]*)?$")))


# Placeholders whose value an operator may have masked: "group***" has lost the space before it.
_MASKABLE = ("group", "id", "instance")


def _join(pieces: list[str], braced: list[bool], alternatives: list, tail_open: bool, hole: str = "") -> str:
    parts = []
    member_elsewhere = any(alts and alts[0].field == "member" and alts[0].kind != "generation" for alts in alternatives)
    for i, piece in enumerate(pieces):
        alts = alternatives[i] if i < len(braced) and i < len(alternatives) else None
        escaped = _escape(piece)
        if alts and alts[0].kind in _MASKABLE and escaped.endswith(" ") and not braced[i]:
            escaped = escaped[:-1] + "(?:\\x20|(?=\\*))"
        parts.append(escaped)
        if i < len(braced):
            if (i + 1 < len(braced) and not pieces[i + 1] and not braced[i] and not braced[i + 1]
                    and (not alts or alts[0].field is None)):
                # `{}{}`: two captures with nothing between them are one (two in a row backtrack
                # over every split of the text: regex_lint rejects them); the next one names it.
                continue
            if alts is None and hole:
                capture = hole
            elif alts is None:
                capture = ".*?"
            else:
                last = tail_open and i == len(braced) - 1 and not pieces[i + 1].strip()
                capture = captures.union(alts, last=last, member_elsewhere=member_elsewhere)
            parts.append("\\{" + capture + "\\}" if braced[i] else capture)
    return "".join(parts)


def write_generated(files: dict[str, str], root: Path, check_only: bool = False) -> list[str]:
    """Write each generated file (path relative to ``root``) whose text changed; the stale ones,
    left as they are with ``check_only``."""
    stale = []
    for rel, text in files.items():
        path = root / rel
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current != text:
            stale.append(rel)
            if not check_only:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
    return stale


def _escape(text: str) -> str:
    text = _SPECIAL.sub(r"\\\1", text)
    # A continuation line's indent is read as tabs, one per indent level the record shows
    # (core/matcher.py: a shipper turns tabs into spaces); a template indented two tabs on every
    # line shows one level, so the count of tabs is not kept (possessive: no backtracking).
    text = _INDENT.sub("\n\x00", text)
    return text.replace("\n", "\\n").replace("\t", "\\t").replace("\x00", "\\t++").replace("'", "\\x27")


_INDENT = regex.compile(r"\n\t+")


def kafka_range(versions: list[str]) -> str:
    first, last = versions[0], versions[-1]
    spec = f">={_short(first)}"
    following = VERSIONS.index(last) + 1
    if following < len(VERSIONS):
        spec += f",<{_short(VERSIONS[following])}"
    return spec


def _short(version: str) -> str:
    major, minor, patch = version.split(".")
    return f"{major}.{minor}" if patch == "0" else version


def _snake(name: str) -> str:
    return regex.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _slug(template: str) -> str:
    words = regex.findall(r"[A-Za-z][A-Za-z0-9]*", template.replace("{}", " "))
    return "_".join(w.lower() for w in words[:6])[:48] or "line"


def toml_str(text: str) -> str:
    # A literal string when it can be one: tomllib reads those several times faster (start-up).
    if "'" not in text and not any(ord(c) < 32 or c == "\x7f" for c in text):
        return f"'{text}'"
    return json.dumps(text, ensure_ascii=False)


def build(rows: list[Row] | None = None) -> tuple[dict[str, str], list[Decision]]:
    """The generated files (path -> text) and the decision for every in-scope template."""
    data = settings()
    all_templates = templates(rows or load_rows(), data)
    forced: frozenset[str] = frozenset()
    absorbed: dict[str, str] = {}
    # A generated pattern may also read a line left to a hand-written one: such a line gets a
    # pattern of its own too; a generated pattern whose every line another pattern reads with
    # all its fields is dropped. A few rounds until nothing changes.
    for _ in range(6):
        decisions = decide(all_templates, data, forced, absorbed)
        files = _files(decisions, data)
        taken, duplicates = _taken(decisions, files)
        if taken <= forced and not duplicates:
            break
        forced = forced | taken
        absorbed.update(duplicates)
    return files, decisions


def _taken(decisions: list[Decision], files: dict[str, str]) -> tuple[frozenset[str], dict[str, str]]:
    with tempfile.TemporaryDirectory() as tmp:
        paths = [patterns_dir() / "packs" / f"{name}.toml" for name in HAND_PACKS]
        for rel, text in files.items():
            if rel.endswith(".toml"):
                path = Path(tmp) / Path(rel).name
                path.write_text(text, encoding="utf-8")
                paths.append(path)
        full = Reader(pack_dirs=paths, include_default=False)
    taken, duplicates = set(), {}
    for d in decisions:
        if d.pattern and not d.generated:
            if any(outcome(full, render(r))[0] != d.pattern for r in d.template.rows):
                taken.add(d.template.template)
        elif d.generated:
            results = [outcome(full, render(r)) for r in d.template.rows]
            readers = {p for p, _ in results}
            other = readers.pop() if len(readers) == 1 else None
            if other and other != d.pattern and not any(problems for _, problems in results):
                duplicates[d.template.template] = other
    return frozenset(taken), duplicates


def _files(decisions: list[Decision], data: dict) -> dict[str, str]:
    generated = [d.template for d in decisions if d.generated]
    by_template = {id(d.template): d for d in decisions}
    used_ids: set[str] = set()
    packs: dict[str, list[str]] = {c: [] for c in COMPONENTS}
    for group in cluster(generated):
        head = group[-1]
        base = f"{head.component}.{_snake(head.cls)}.{_slug(head.template)}"
        pattern_id, n = base, 2
        while pattern_id in used_ids:
            pattern_id, n = f"{base}_{n}", n + 1
        used_ids.add(pattern_id)
        for t in group:
            by_template[id(t)].pattern = pattern_id
        packs[head.component].append(_pattern_toml(pattern_id, group, data, by_template))
    files = {}
    for component in COMPONENTS:
        header = (f"# GENERATED by `python -m rebalance_doctor.packgen.packgen` from the Kafka template inventory:\n"
                  f"# the {component} lines that the hand-written packs do not cover. Do not edit by hand;\n"
                  f"# change params.toml / packgen.toml (or a hand-written pack) and regenerate.\n"
                  f'pack = "{GENERATED_PREFIX}{component}"\nversion = "{GENERATED_VERSION}"\ncomponent = "{component}"\n'
                  f"scan = {json.dumps(data['scan'])}\n")
        files[f"patterns/packs/{GENERATED_PREFIX}{component}.toml"] = header + "".join(packs[component])
        files[f"fixtures/packs/{GENERATED_PREFIX}{component}.log"] = _fixture(
            [d for d in decisions if component in d.template.components and d.pattern], component)
    return files


def _pattern_toml(pattern_id: str, group: list[Template], data: dict, by_template: dict) -> str:
    head = group[-1]
    gate = _common_gate(group)
    classes = sorted({t.cls for t in group})
    out = [f'\n[patterns."{pattern_id}"]\nevent = "{event_for(head, data)}"\ngate = {toml_str(gate)}\n'
           f"doc = {toml_str(', '.join(classes) + ': ' + head.template.splitlines()[0][:160])}\n"]
    # Among generated patterns the most literal text is tried first. They come after the
    # hand-written ones (priority 0), except those made for lines a hand-written pattern reads
    # without all their fields.
    size = max(_literal_size(t.template) for t in group)
    forced = any(by_template[id(t)].priority for t in group)
    out.append(f"priority = {size if forced else size - 1000}\n")
    if constants := constants_for(head, data):
        out.append("set = { " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in sorted(constants.items())) + " }\n")
    if all("{" not in t.template and "\n" not in t.template for t in group) and all(t.template == gate for t in group):
        # A message of fixed text only ("Starting"): any other line that holds it is no near miss.
        out.append("whole = true\n")
    # The most specific wording first: an older, shorter wording's open tail must not take it.
    for t in sorted(group, key=lambda t: -len("".join(template_parts(t.template)[0]))):
        sample = render(t.latest)
        source = variant_regex(t)
        # The sample states what this regex reads (plus what the prefix gives); whether that
        # is all the line states is the coverage test's question, asked of the renderer.
        prefix, from_prefix = prefix_of(t.latest)
        found = regex.search(source, sample.message[len(prefix):])
        read = {k for k, v in (found.groupdict() if found else {}).items() if v is not None} | set(from_prefix)
        expect = ", ".join(f"{k} = {json.dumps(v, ensure_ascii=False)}" for k, v in sample.fields.items()
                           if k in CAPTURE_COLUMNS and k in read and v is not None)
        loggers = json.dumps(t.loggers)
        out.append(f'[[patterns."{pattern_id}".variants]]\nkafka = "{kafka_range(t.versions)}"\n'
                   f"logger = {loggers}\nregex = '{source}'\n"
                   f"samples = [{{ line = {toml_str(sample.line)}, expect = {{ {expect} }} }}]\n")
    return "".join(out)


def _fixture(decisions: list[Decision], component: str) -> str:
    lines = ["#expect lines: generated by `python -m rebalance_doctor.packgen.packgen`: one line per inventory",
             "#expect lines: template (its latest version), annotated with the pattern that must read it."]
    lines = [l.replace("#expect lines:", "# ") for l in lines]
    for d in sorted(decisions, key=lambda d: (d.template.cls, d.template.template)):
        rendered: Rendered = render(d.template.latest_of(component))
        lines.append(f"#expect: {d.pattern}")
        lines.append(rendered.line)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the generated files are not current")
    args = parser.parse_args(argv)
    from .inventory import missing

    why = missing()
    if why:
        print(f"error: {why}", file=sys.stderr)
        return 2
    files, decisions = build()
    stale = write_generated(files, REPO, check_only=args.check)
    if eventnames.write(check_only=args.check):  # the registry follows the packs just written
        stale.append(eventnames.TARGET)
    generated = sum(1 for d in decisions if d.generated)
    hand = sum(1 for d in decisions if d.pattern and not d.generated)
    excluded = sum(1 for d in decisions if d.excluded)
    print(f"{len(decisions)} templates in scope: {hand} read by hand-written patterns, {generated} by generated "
          f"ones, {excluded} left out on purpose", file=sys.stderr)
    if args.check and stale:
        print("not current: " + ", ".join(stale) + " (run python -m rebalance_doctor.packgen.packgen)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
