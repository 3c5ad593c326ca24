"""Coverage of the Kafka template inventory by the packs, and docs/patterns.md.

Every in-scope row of the inventory (INFO/WARN/ERROR, and the DEBUG templates a diagnosis
uses) is rendered into the line its version writes and read through the parsing core. A row
counts as covered when it is read as the pattern its template's fixture record is annotated
with (fixtures/packs/inventory-*.log) and with every events column the line states.

    python -m rebalance_doctor.packgen.coverage            # rewrite docs/patterns.md
    python -m rebalance_doctor.packgen.coverage --check    # exit 1 when it is not current
"""

from __future__ import annotations

import argparse
import random
import sys
import zlib
from collections import defaultdict
from dataclasses import dataclass, field

from ..core.packcheck import ANNOTATION
from . import packgen
from .check import Reader, outcome
from .inventory import COMPONENTS, REPORTED_LEVELS, VERSIONS, Row, default_path, load_rows, version_key
from .render import BASE_DATE, LAYOUTS, Rendered, layout_for, render

DOC = packgen.REPO / "docs" / "patterns.md"


@dataclass
class Miss:
    row: Row
    expected: str | None
    got: str | None
    problems: list[str]
    rendered: Rendered | None = None     # the rendering that was missed


@dataclass
class Coverage:
    totals: dict[tuple[str, str, str], int] = field(default_factory=lambda: defaultdict(int))   # (component, version, tier)
    covered: dict[tuple[str, str, str], int] = field(default_factory=lambda: defaultdict(int))
    misses: list[Miss] = field(default_factory=list)
    excluded: dict[tuple[str, str], str] = field(default_factory=dict)                          # (classes, template) -> reason
    layouts: dict[str, list[int]] = field(default_factory=dict)                                 # layout -> [renderings, missed]
    files: dict[str, list[int]] = field(default_factory=dict)                                   # layout -> [records, read right] in a file with foreign lines
    templates: int = 0

    def share(self, component: str, version: str, tier: str) -> float | None:
        total = self.totals.get((component, version, tier), 0)
        return None if not total else self.covered.get((component, version, tier), 0) / total


def tier(row: Row) -> str:
    return "reported" if row.level in REPORTED_LEVELS else "debug"


def fixture_patterns() -> dict[str, str]:
    """Rendered record -> pattern id, from the annotated inventory fixtures (a record runs from
    the line after its annotation to the next annotation)."""
    found = {}
    for path in sorted((packgen.REPO / "fixtures" / "packs").glob(f"{packgen.GENERATED_PREFIX}*.log")):
        pattern_id, record = None, []
        for line in path.read_text(encoding="utf-8").split("\n") + ["#expect: -"]:
            if line.startswith(ANNOTATION):
                if pattern_id is not None:
                    found["\n".join(record).rstrip("\n")] = pattern_id
                pattern_id, record = line.split(":", 1)[1].strip(), []
            elif pattern_id is not None:
                record.append(line)
    return found


DRAWS = 4            # renderings of each row: values, layout and masks drawn anew each time
MASK_RATE = 0.25     # share of renderings whose identifying values are masked


def renderings(row: Row, draws: int = DRAWS) -> list:
    """The row rendered ``draws`` times with values drawn from seeds of its own: the first in the
    layout Kafka ships for it, the others in any shipped layout, some with masked values."""
    out = []
    base = zlib.crc32(f"coverage|{row.component}|{row.version}|{row.cls}|{row.template}".encode())
    for k in range(draws):
        seed = base * 31 + k
        layout = layout_for(row) if k == 0 else random.Random(seed).choice(LAYOUTS)
        out.append(render(row, seed=seed, layout=layout, mask_rate=0.0 if k == 0 else MASK_RATE))
    return out


def measure(rows: list[Row] | None = None, reader: Reader | None = None, draws: int = DRAWS,
            files: bool = True) -> Coverage:
    rows = rows if rows is not None else load_rows()
    reader = reader or Reader()
    data = packgen.settings()
    all_templates = packgen.templates(rows, data)
    spelled_out = packgen.spelled_out_templates(all_templates)
    annotated = fixture_patterns()
    result = Coverage(templates=len(all_templates))
    for t in all_templates:
        reason = packgen.exclusion(t.template, data, spelled_out, {r.cls for r in t.rows})
        if reason:
            classes = ", ".join(sorted({r.cls for r in t.rows}))
            result.excluded[(classes, t.template)] = reason
            continue
        expected = {c: annotated.get(render(t.latest_of(c)).line.rstrip("\n")) for c in t.components}
        for row in t.rows:
            key = (row.component, row.version, tier(row))
            result.totals[key] += 1
            want = expected[row.component]
            first_miss = None
            for rendered in renderings(row, draws):
                got, problems = outcome(reader, rendered)
                ok = got == want and got is not None and not problems
                counts = result.layouts.setdefault(rendered.layout, [0, 0])
                counts[0] += 1
                if not ok:
                    counts[1] += 1
                    first_miss = first_miss or Miss(row, want, got, problems, rendered)
            if first_miss is None:
                result.covered[key] += 1
            else:
                result.misses.append(first_miss)
    if files:
        result.files = measure_files(rows)
    return result


def measure_files(rows: list[Row] | None = None, layouts: tuple[str, ...] = LAYOUTS) -> dict[str, list[int]]:
    """Per layout: [records, read right, read right when hard-wrapped] when every in-scope template's
    latest row is written into one file of that layout with foreign lines between the records (a
    Kibana date line before every record in every other layout, print() and CLI output or a blank
    line after a third of them) and the file is read whole; then the same file hard-wrapped at 80
    columns (every other layout) or 200."""
    import tempfile
    from pathlib import Path

    from ..core.options import ReadOptions
    from ..engines.local import read_events
    from .check import field_problems
    from .logfile import write

    rows = rows if rows is not None else load_rows()
    data = packgen.settings()
    all_templates = packgen.templates(rows, data)
    spelled_out = packgen.spelled_out_templates(all_templates)
    annotated = fixture_patterns()
    wanted = []
    for t in all_templates:
        if packgen.exclusion(t.template, data, spelled_out, {r.cls for r in t.rows}):
            continue
        for component in t.components:
            row = t.latest_of(component)
            wanted.append((row, annotated.get(render(row).line.rstrip("\n"))))
    result: dict[str, list[int]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n, layout in enumerate(layouts):
            rng = random.Random(f"files|{layout}")
            records = [render(row, seed=rng.getrandbits(32), layout=layout, mask_rate=MASK_RATE / 2) for row, _ in wanted]
            counts = [len(wanted)]
            for wrap in (0, 80 if n % 2 == 0 else 200):
                text, placed = write(records, random.Random(f"lines|{layout}"), foreign_rate=0.33, kibana=n % 2 == 0,
                                     wrap=wrap)
                path = Path(tmp) / f"{layout}-{wrap}.log"
                path.write_text(text, encoding="utf-8")
                events, _ = read_events([str(path)], ReadOptions(base_date=BASE_DATE))
                by_line = {e["line"]: e for e in events}
                right = 0
                for (row, want), spot in zip(wanted, placed):
                    event = by_line.get(spot.line)
                    if event is not None and event["pattern"] == want and not field_problems(event, spot.rendered.fields):
                        right += 1
                counts.append(right)
            result[layout] = counts
    return result


def markdown(result: Coverage, clients: list[str] | None = None) -> str:
    """docs/patterns.md; ``clients``: the non-Java clients' coverage rows (clientgen's, computed
    when not given)."""
    if clients is None:
        from . import clientgen

        clients = clientgen.coverage_table(clientgen.build()[1])
    out = ["# Pattern coverage of Kafka's rebalance log lines", "",
           "Generated by `python -m rebalance_doctor.packgen.coverage` (checked by tests/test_coverage.py); do not edit.", "",
           "The inventory in `patterns/kafka/` (extracted from the releases' `-sources` jars by",
           "`python -m rebalance_doctor.packgen.sources`, see [kafka-inventory.md](kafka-inventory.md)) lists every",
           "rebalance-related log template of Apache Kafka 2.4.0 to 4.4.0. Each in-scope row (INFO/WARN/ERROR, and the DEBUG templates a diagnosis uses: heartbeats,",
           "sessions, polls, joins, syncs, assignments, generations, leaves, fencing) is rendered into the line that",
           "version writes and read through the parsing core. The renderer (`rebalance_doctor/packgen/render.py`) prints",
           "each argument the way its Java or Scala type prints it, the type read at the log call in Kafka's source",
           "(`packgen/argtypes.toml`): `MemberMetadata(...)`, `Generation{...}`, `Some(x)` / `Optional[x]`, Scala",
           "`Set(...)` and Java `[...]` collections, `Errors` names, exceptions, `Utils.toLogDateTimeFormat` times.",
           f"Its values are drawn anew for each of {DRAWS} renderings of a row (`packgen/values.py`): member ids of the Java",
           "client, Streams, Connect, KIP-848 and non-Java clients (`main@host (github.com/segmentio/kafka-go)-<uuid>`),",
           "group ids with dots and dashes, static instance ids, client hosts, generations of 1 to 5 digits; the first",
           "rendering is in the layout Kafka ships for the row, the others in any shipped layout",
           f"(`patterns/layouts.toml`), {int(MASK_RATE * 100)}% of them with identifying values masked (`***`, `<redacted>`, and",
           "`group***` where the mask ate the space). A row is covered when every rendering is read as the pattern its",
           "template's fixture record is annotated with (`fixtures/packs/inventory-*.log`) and with every events column",
           "the line states (group, member, instance, client, client host, thread, generation, leader, state, reason,",
           "error, partitions, tasks, counts, delays, scheduled times).", "",
           "Patterns: the hand-written packs (`patterns/packs/{broker,consumer,streams,connect}.toml`) come first; the",
           "lines they do not read with all their fields get a pattern generated from the template itself",
           "(`patterns/packs/inventory-*.toml`, `python -m rebalance_doctor.packgen.packgen`).", "",
           "To change what a line yields: edit a hand-written pack (or `rebalance_doctor/packgen/params.toml` for the",
           "fields generated patterns capture, `argtypes.toml` for how an argument prints, `packgen.toml` for event names,",
           "the constant fields a wording alone states (an event rule's `set`), exclusions and scan literals), then run",
           "`python -m rebalance_doctor.packgen.packgen`,",
           "`python -m rebalance_doctor.packgen.coverage` and `rebalance-doctor patterns check` (CI runs the last one and",
           "the tests check the first two are current; `patterns check --coverage` prints the tables below). packgen",
           "(and clientgen) also rewrite `rebalance_doctor/core/eventnames.py`, the registry of the event names the packs",
           "emit (`python -m rebalance_doctor.packgen.eventnames` after editing a hand-written pack's `event`).",
           "The analysis reads what a line states from its fields only: a classifier or rule that needs more of a line",
           "gets it as a capture (or a `set` constant) of the line's pattern, not by searching `message`",
           "(tests/test_fields.py lists the readers left, and fails on a new one).",
           "A team's own packs go in a directory passed with `--packs DIR` to `events`, `analyze`, `batch` and",
           "`patterns check|list|show|test`; `patterns check --packs DIR --fixtures DIR` checks them against their",
           "own annotated fixture logs (`#expect: pattern.id` on the line before a record). It also rejects",
           "pattern and layout regexes that backtrack catastrophically: nested repeats of the same characters",
           "(`(a+)+`) or adjacent ones with only optional items between (` * +`, ` +\\S* +`); write such a",
           "repeat once, or make it possessive (`x++`) or atomic (`(?>...)`). Pattern regexes may also not",
           "stack free repeats (of any character: `.*`, `.+?`) on one path with something that must match",
           "after the second (`group (?P<group>.+?) in state \\w+ \\(reason: (?P<reason>.*)\\)$`): on a line",
           "holding many records (an HTML report, a log that lost its line ends) every split between them is",
           "tried; 100 records took over 10 s. Seal the earlier ones with the text that ends them",
           "(`(?>(?P<group>.+?) in state )`); the generators do (`captures.seal_free_repeats`).", "",
           "The non-Java clients (librdkafka and its bindings, kafka-python, aiokafka, faust, kafkajs, franz-go,",
           "faust-streaming, sarama, kafka-go, brod, ruby-kafka) have their own inventories and packs: their coverage",
           "per client and release is the last table below (how the inventories are made: [clients.md](clients.md)).", "",
           "## INFO, WARN and ERROR templates", "",
           _table(result, "reported"), "",
           "## DEBUG templates a diagnosis uses", "",
           _table(result, "debug"), "",
           "## Renderings per layout", "",
           "| layout | renderings | read right |", "|---|---|---|"]
    for layout, (total, missed) in sorted(result.layouts.items()):
        out.append(f"| {layout} | {total} | {100 * (total - missed) / total:.1f}% |")
    out += ["", "## Records in a log file with foreign lines", "",
            "Every in-scope template's latest row, written into one file per layout (`packgen/logfile.py`) with lines no",
            "logging framework wrote for them between the records: a Kibana/Elastic export's date line",
            "(`Jan 17, 2020 @ 15:54:24.877`) before every record in every other layout, an application's `print()`",
            "output, CLI output or a blank line after a third of them. The file is read whole (`events`); a record is",
            "read right when the event on its first line is its pattern's with every field it states. The last column",
            "reads the same file hard-wrapped at a terminal's width (80 columns, or 200 in every other layout).", "",
            "| layout | records | read right | hard-wrapped: read right |", "|---|---|---|---|"]
    for layout, (total, right, wrapped) in sorted(result.files.items(), key=lambda kv: LAYOUTS.index(kv[0])):
        width = 80 if LAYOUTS.index(layout) % 2 == 0 else 200
        out.append(f"| {layout} | {total} | {100 * right / total:.1f}% | {100 * wrapped / total:.1f}% (at {width}) |")
    out += ["", "## Beyond the inventory", "",
            "Lines the inventory does not hold, read by hand-written patterns with samples and annotated fixture lines",
            "(`fixtures/packs/*.log`), their wording taken from each project's source (noted in the pack):", "",
            "- `patterns/packs/broker.toml`: the 0.10-2.3 broker wordings (\"Preparing to restabilize group\", no state or",
            "  reason before 2.1, \"Stabilized group X generation N\" without the offsets partition, \"has left, removing it",
            "  from the group\"); a file in those wordings gets a `kafka_version` below 2.4.",
            "- `patterns/packs/libraries.toml`: spring-kafka's `<group>: partitions assigned|revoked|lost: [...]`,",
            "  reactor-kafka's `onPartitionsAssigned|Revoked [...]`, SmallRye Reactive Messaging's (Quarkus) rebalance-listener",
            "  messages `SRMSG18221`-`SRMSG18226`, ksqlDB's `Restarting query ...` and `Unhandled exception caught in streams",
            "  thread`.",
            "- `patterns/packs/application.toml`: the application's own rebalance callbacks in the shapes the clients'",
            "  examples print (`assigned: ['orders-0']`, `Assignment: [TopicPartition{topic=orders,partition=0,...}]`,",
            "  `Revoked: {TopicPartition(topic='orders', partition=0)}`): the topics and partition moves that tie",
            "  processes naming no group into one (docs/client-diagnosis.md).",
            "- `patterns/packs/consumer.toml`: the `CommitFailedException` an application logs (\"...it is likely that the",
            "  consumer was kicked out of the group\").", "",
            "## Left out on purpose", "",
            "| classes | template | why |", "|---|---|---|"]
    for (classes, template), reason in sorted(result.excluded.items()):
        out.append(f"| {classes} | `{_cell(template)}` | {reason} |")
    out += ["", "## Rows not covered", "",
            "Rendered rows the packs read as another pattern, with a wrong field, or not at all.", ""]
    if not result.misses:
        out.append("None.")
    else:
        out += ["| component | version | class | template | layout | read as | problem |",
                "|---|---|---|---|---|---|---|"]
        for miss in sorted(result.misses, key=lambda m: (m.row.component, version_key(m.row.version), m.row.template)):
            problem = "; ".join(miss.problems) if miss.problems else f"expected {miss.expected}"
            layout = miss.rendered.layout if miss.rendered else "-"
            out.append(f"| {miss.row.component} | {miss.row.version} | {miss.row.cls} | `{_cell(miss.row.template)}` "
                       f"| {layout} | {miss.got or '-'} | {_cell(problem)} |")
    out += ["", "## Non-Java clients", "",
            "Per client and release: the templates of its inventory (`patterns/clients/<client>.jsonl`), those in scope",
            "and those a pattern of `patterns/packs/client-<client>.toml` reads, each proven by a rendering in every",
            "layout the client writes (`fixtures/clients/`, `python -m rebalance_doctor.packgen.clientgen`).", "",
            *clients]
    return "\n".join(out) + "\n"


TARGET = 0.99


def below(result: Coverage, target: float = TARGET) -> list[tuple[str, str, str, float]]:
    """(component, version, tier, share) of every cell under the target."""
    out = []
    for (component, version, tier_name), total in sorted(result.totals.items()):
        share = result.covered.get((component, version, tier_name), 0) / total
        if share < target:
            out.append((component, version, tier_name, share))
    return out


def table(result: Coverage, which: str) -> str:
    return _table(result, which)


def _table(result: Coverage, which: str) -> str:
    lines = ["| component | " + " | ".join(VERSIONS) + " |", "|---|" + "---|" * len(VERSIONS)]
    for component in COMPONENTS:
        cells = []
        for version in VERSIONS:
            total = result.totals.get((component, version, which), 0)
            covered = result.covered.get((component, version, which), 0)
            cells.append(f"{100 * covered / total:.1f}% ({covered}/{total})" if total else "-")
        lines.append(f"| {component} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cell(text: str) -> str:
    text = text.replace("\n", "\\n").replace("\t", "\\t").replace("|", "\\|").replace("`", "'")
    return text if len(text) <= 140 else text[:137] + "..."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write docs/patterns.md from the inventory coverage.")
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/patterns.md is not current")
    args = parser.parse_args(argv)
    from .inventory import missing

    why = missing()
    if why:
        print(f"error: {why}", file=sys.stderr)
        return 2
    text = markdown(measure())
    current = DOC.read_text(encoding="utf-8") if DOC.exists() else None
    if args.check:
        if current != text:
            print(f"{DOC} is not current: run python -m rebalance_doctor.packgen.coverage", file=sys.stderr)
            return 1
        return 0
    if current != text:
        DOC.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
