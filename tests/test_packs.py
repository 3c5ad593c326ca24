"""The pack format, the matcher's gate index and `patterns check` findings (packcheck)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from rebalance_doctor.core.cache import CACHE_VARIABLE
from rebalance_doctor.core.matcher import Matcher
from rebalance_doctor.core.packcheck import check
from rebalance_doctor.core.packs import PackError, load_packs

LOGGER = "org.apache.kafka.clients.consumer.internals.ConsumerCoordinator"
JOIN_LINE = (f"[2024-05-01 13:45:15,345] INFO [Consumer clientId=consumer-orders-1, groupId=orders] "
             f"(Re-)joining group ({LOGGER})")
WIDGET_LINE = (f"[2024-05-01 13:45:16,345] INFO [Consumer clientId=consumer-orders-1, groupId=orders] "
               f"Widget rebalance scheduled for group orders at generation 7 ({LOGGER})")


def write_pack(directory: Path, body: str, name: str = "team") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.toml"
    path.write_text(f'pack = "{name}"\nversion = "0.1.0"\ncomponent = "consumer"\nscan = ["ebalanc"]\n' + body,
                    encoding="utf-8")
    return directory


WIDGET = '''
[patterns."team.widget.rebalance"]
event = "join.requested"
gate = "Widget rebalance scheduled"
[[patterns."team.widget.rebalance".variants]]
kafka = ">=2.4"
logger = "org.apache.kafka.clients.consumer.internals.ConsumerCoordinator"
regex = '^Widget rebalance scheduled for group (?P<group>\\S+) at generation (?P<generation>\\d+)$'
samples = [{ line = "LINE", expect = { group = "orders", generation = 7 } }]
'''.replace("LINE", WIDGET_LINE.replace('"', '\\"'))


def write_fixture(directory: Path, pattern_id: str, line: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "team.log").write_text(f"#expect: {pattern_id}\n{line}\n", encoding="utf-8")
    return directory


def messages(report) -> str:
    return "\n".join(str(f) for f in report.findings)


@pytest.mark.slow
def test_shipped_packs_and_fixtures_pass_the_check():
    report = check()
    assert report.ok, messages(report)
    assert report.patterns > 700 and report.annotations > 1000


def test_a_team_pack_with_its_fixture_passes(tmp_path):
    report = check([write_pack(tmp_path / "packs", WIDGET)], write_fixture(tmp_path / "fx", "team.widget.rebalance", WIDGET_LINE))
    assert report.ok, messages(report)
    assert report.patterns == 1 and report.annotations == 1


def test_duplicate_id_is_rejected_with_both_files(tmp_path):
    body = WIDGET.replace("team.widget.rebalance", "consumer.join.start")
    with pytest.raises(PackError, match=r"consumer\.join\.start: duplicate pattern id \(also in .*consumer\.toml\)"):
        load_packs([write_pack(tmp_path, body)])


def test_broken_regex_says_where_the_sample_stops_matching(tmp_path):
    broken = WIDGET.replace("at generation (?P<generation>", "at epoch (?P<generation>")
    report = check([write_pack(tmp_path / "packs", broken)], write_fixture(tmp_path / "fx", "team.widget.rebalance", WIDGET_LINE))
    text = messages(report)
    assert "team.widget.rebalance[0]: sample does not match its own variant" in text
    assert "the regex stops after 47 of 59 characters, at 'generation 7'" in text
    assert "expected team.widget.rebalance, no pattern read the record; closest: team.widget.rebalance[0] matched 47" in text


def test_wrong_expected_field_is_reported(tmp_path):
    report = check([write_pack(tmp_path / "packs", WIDGET.replace("generation = 7", "generation = 8"))],
                   write_fixture(tmp_path / "fx", "team.widget.rebalance", WIDGET_LINE))
    assert "sample field generation: expected 8, got 7" in messages(report)


def test_sample_without_scan_literal_is_reported(tmp_path):
    def quiet(text: str) -> str:  # no scan literal anywhere, the logger name included
        return text.replace("Widget rebalance scheduled for group", "Widget reshuffle scheduled for app").replace(
            f"({LOGGER})", "(com.example.Widget)")
    body, line = quiet(WIDGET), quiet(WIDGET_LINE)
    report = check([write_pack(tmp_path / "packs", body)], write_fixture(tmp_path / "fx", "team.widget.rebalance", line))
    assert "sample holds none of the scan literals" in messages(report)


def test_pattern_that_also_reads_another_patterns_line_is_reported(tmp_path):
    greedy = WIDGET + '''
[patterns."team.any.joining"]
event = "join.start"
gate = "joining"
[[patterns."team.any.joining".variants]]
regex = 'joining'
samples = ["JOIN"]
'''.replace("JOIN", JOIN_LINE)
    report = check([write_pack(tmp_path / "packs", greedy)], write_fixture(tmp_path / "fx", "team.widget.rebalance", WIDGET_LINE))
    text = messages(report)
    assert "team.any.joining[0]: sample is also read by consumer.join.start[0]" in text
    assert "team.any.joining: no fixture line" in text


def test_fixture_annotation_that_does_not_hold_is_reported(tmp_path):
    fixtures = write_fixture(tmp_path / "fx", "consumer.join.success", JOIN_LINE)
    report = check([write_pack(tmp_path / "packs", WIDGET)], fixtures)
    text = messages(report)
    assert "team.log:2: expected consumer.join.success, read as consumer.join.start" in text
    assert "team.widget.rebalance: no fixture line" in text


def test_annotation_naming_an_unknown_pattern_is_reported(tmp_path):
    report = check([write_pack(tmp_path / "packs", WIDGET)], write_fixture(tmp_path / "fx", "team.no.such", WIDGET_LINE))
    assert "annotation names team.no.such, which no loaded pack defines" in messages(report)


def test_gate_index_finds_exactly_the_gates_a_body_holds():
    packs = load_packs()
    matcher = Matcher(packs)
    variants = packs.variants()
    rng = random.Random(3)
    bodies = [s.line for v in rng.sample(variants, 150) for s in v.samples]
    bodies += ["", "abc", "Member x in group y has failed, removing it from the group and joining"]
    for body in bodies:
        want = sorted((v for v in variants if v.gate in body), key=lambda v: (-v.priority, -len(v.gate), v.pattern_id, v.index))
        assert matcher.candidates(body) == want


def test_shipped_regexes_compile_lazily_without_a_cache_and_all_compile(monkeypatch):
    monkeypatch.setenv(CACHE_VARIABLE, "off")
    lazy = load_packs()
    assert all(v._compiled is None for v in lazy.variants())
    assert all(v._compiled is not None for v in load_packs(compile_all=True).variants())


def test_scan_literals_stay_few():
    # Each scan literal costs one bytes.find pass over every 16 MiB chunk.
    # Kafka's own packs hold 36 (the Java libraries' and masked-group literals among them); the
    # client packs (patterns/packs/client-*.toml) add those Kafka's logs seldom hold
    # (clientgen.toml says how they are chosen); the default aho-corasick engine
    # makes one pass for all of them, and the events benchmark measures the cost.
    assert len(load_packs().scan_keys) <= 59   # the seed packs had 50


def test_a_whole_gate_takes_only_a_line_that_is_the_gate(tmp_path):
    from rebalance_doctor.core.matcher import Matcher, Miss
    from rebalance_doctor.core.packs import load_packs

    pack = tmp_path / "team.toml"
    pack.write_text('pack = "team"\nversion = "1.0.0"\nscan = ["Starting"]\n'
                    '[patterns."team.thread.starting"]\nevent = "team.thread_started"\ngate = "Starting"\nwhole = true\n'
                    '[[patterns."team.thread.starting".variants]]\nregex = \'^Starting\\s*$\'\n'
                    'samples = ["[2024-03-05 09:14:00,000] INFO Starting (team.Thread)"]\n', encoding="utf-8")
    matcher = Matcher(load_packs([pack], include_default=False))
    assert matcher.match("Starting").variant.pattern_id == "team.thread.starting"
    assert matcher.match("[Fetcher 1] Starting") is None           # holds the gate: no candidate, no Miss
    pack.write_text(pack.read_text(encoding="utf-8").replace("whole = true", ""), encoding="utf-8")
    assert isinstance(Matcher(load_packs([pack], include_default=False)).match("[Fetcher 1] Starting"), Miss)


def test_a_mirrored_release_without_its_mirror_is_an_error_not_an_empty_release(tmp_path, monkeypatch):
    """4.3.2 and 4.4.0 are read from a git mirror (their -sources jars are not published): without it every read came
    back empty and `packgen.sources --out` rewrote the inventory without those releases, exit 0."""
    from rebalance_doctor.packgen import sources
    mirrored = sorted(sources.config().get("mirror", {}))
    assert mirrored, "sources.toml reads some release from a mirror"
    monkeypatch.setattr(sources, "MIRRORS", tmp_path)
    with pytest.raises(SystemExit, match=r"fetch github:"):
        sources.Release(mirrored[0])
