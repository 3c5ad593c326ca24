"""docs/accuracy.md is written by three tools; the simulated table's writer keeps the others' sections."""
from __future__ import annotations

from rebalance_doctor.judge.accuracy_doc import GENERATED, render_doc
from rebalance_doctor.judge.recorded import markers

HEADER = {"per_scenario": 20, "count": 1160, "seed": 7, "scenarios": 58, "code": "this tree", "commit": "abc1234",
          "date": "2026-12-07", "seconds": 194}


def test_every_section_another_tool_wrote_is_kept_in_place():
    blocks = {name: f"{markers(name)[0]}\n## {name}\n\nbody of {name}\n{markers(name)[1]}" for name in GENERATED}
    previous = render_doc("", "| old table |", HEADER, "main old")
    previous = previous.replace("\n## How it is computed", "\n" + "\n\n".join(blocks.values()) + "\n\n## How it is computed")
    again = render_doc(previous, "| new table |", HEADER, "main new")
    for name, block in blocks.items():
        assert again.count(block) == 1, name
    assert again.index(blocks["real-kafka"]) < again.index("## How it is computed") < again.index("| new table |")
    assert "### main new" in again and "### main old" in again


def test_the_recorded_judge_scores_a_corpus_and_writes_its_section(tmp_path, capsys):
    import shutil
    from pathlib import Path

    from rebalance_doctor.judge import recorded

    lab = Path(__file__).resolve().parent.parent / "fixtures" / "lab"
    shutil.copytree(lab / "poll-timeout@4.4.0", tmp_path / "corpus" / "poll-timeout@4.4.0")
    doc = tmp_path / "accuracy.md"
    doc.write_text(render_doc("", "| table |", HEADER, None), encoding="utf-8")
    assert recorded.main([str(tmp_path / "corpus"), "--out", str(doc)]) == 0
    said = capsys.readouterr().out
    assert "- first finding is the expected one: 1.00 (1/1)" in said
    written = doc.read_text(encoding="utf-8")
    assert markers("real-kafka")[0] in written and recorded.unrecorded_section() in written
