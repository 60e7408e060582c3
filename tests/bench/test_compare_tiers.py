"""Every run's latency on the questions each tier of a cascade run answered."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.__main__ import main
from bench.compare import write_comparison
from bench.compare_tiers import answering_tier, is_cascade, tier_groups
from bench.run import QuestionResult


def _result(qid: str, position: int, ex: float, latency: float, tier: str | None) -> QuestionResult:
    return QuestionResult(
        id=qid,
        position=position,
        question=qid,
        database="db",
        scores=dict.fromkeys(("ex", "spider_ex", "soft_f1", "bf_beta"), ex),
        latency_s=latency,
        system_metadata={} if tier is None else {"tier": tier},
    )


def _write(folder: Path, results: list[QuestionResult]) -> Path:
    folder.mkdir()
    lines = "".join(r.model_dump_json() + "\n" for r in results)
    (folder / "results.jsonl").write_text(lines, encoding="utf-8")
    return folder


# the large model alone: 30 s a question; the cascade: 10 s where the small tier answered
# (q1, q2), 45 s where it escalated (q3 through the plain retry, q4), q5 failed without a tier
ALONE = [_result(f"q{i}", i, 1.0, 30.0, "default") for i in range(1, 6)]
CASCADE = [
    _result("q1", 1, 1.0, 10.0, "small"),
    _result("q2", 2, 0.0, 12.0, "small"),
    _result("q3", 3, 1.0, 45.0, "default:plain"),
    _result("q4", 4, 1.0, 47.0, "default"),
    _result("q5", 5, 0.0, 60.0, None),
]


def test_the_answering_tier_drops_the_retry_suffix_and_a_single_tier_run_is_no_cascade():
    assert [answering_tier(r) for r in CASCADE] == ["small", "small", "default", "default", None]
    assert is_cascade(CASCADE) and not is_cascade(ALONE)
    assert not is_cascade([_result("q1", 1, 1.0, 1.0, None)])


def test_each_tier_group_carries_every_run_on_the_same_questions():
    ids = [f"q{i}" for i in range(1, 6)]
    groups = tier_groups(["alone", "cascade"], [ALONE, CASCADE], ids)
    assert [(g.cascade, g.tier, g.count) for g in groups] == [
        ("cascade", "small", 2),
        ("cascade", "default", 2),
        ("cascade", "none", 1),
    ]
    small, default, _ = groups
    alone, cascade = small.rows
    assert (alone.run, alone.latency_mean, alone.share_of_first) == ("alone", 30.0, 1.0)
    assert (cascade.ex, cascade.latency_p50, cascade.latency_mean) == (0.5, 11.0, 11.0)
    assert cascade.share_of_first == pytest.approx(11.0 / 30.0)
    assert default.rows[1].latency_mean == 46.0 and default.rows[1].share_of_first == pytest.approx(
        46.0 / 30.0
    )
    # only the questions asked: q1 and q3
    groups = tier_groups(["alone", "cascade"], [ALONE, CASCADE], ["q1", "q3"])
    assert [(g.tier, g.count) for g in groups] == [("small", 1), ("default", 1)]


def test_compare_prints_and_writes_the_tier_tables_only_for_a_cascade(tmp_path, capsys):
    alone = _write(tmp_path / "alone", ALONE)
    cascade = _write(tmp_path / "cascade", CASCADE)
    assert main(["compare", str(alone), str(cascade)]) == 0
    printed = capsys.readouterr().out
    assert "Latency on the questions each tier of cascade answered" in printed
    assert "| small | 2 | cascade | 0.500 | 11.00 | 11.00 | 0.37x |" in printed
    assert "| default | 2 | alone | 1.000 | 30.00 | 30.00 | 1.00x |" in printed
    assert "tier of alone" not in printed
    written = write_comparison([alone, cascade], tmp_path / "cmp").read_text()
    assert "| default | 2 | cascade | 1.000 | 46.00 | 46.00 | 1.53x |" in written
    other = _write(tmp_path / "other", ALONE)
    assert main(["compare", str(alone), str(other)]) == 0
    assert "Latency on the questions each tier" not in capsys.readouterr().out
