"""Majority vote over execution results."""

from __future__ import annotations

import pytest

from agents.answer import Candidate
from agents.sql.vote import agreement, fingerprint, is_ordered, vote
from kb.target.results import Results


def cand(sql: str, rows, *, columns=("a",), sample=0, repairs=0, error=None) -> Candidate:
    if error:
        results = Results.failure("sql", error, sql=sql, elapsed=0.0)
    else:
        results = Results(columns=list(columns), rows=[tuple(r) for r in rows], sql=sql)
    return Candidate(sql=sql, sample=sample, repairs=repairs, results=results)


def test_float_tolerance_column_order_and_row_order():
    a = Results(columns=["x", "y"], rows=[(0.1 + 0.2, "n"), (2.0, "m")])
    b = Results(columns=["y", "x"], rows=[("m", 2), ("n", 0.3)])
    assert fingerprint(a, ordered=False) == fingerprint(b, ordered=False)
    assert fingerprint(a, ordered=True) != fingerprint(b, ordered=True)
    assert fingerprint(a, ordered=False) != fingerprint(
        Results(columns=["x", "y"], rows=[(0.31, "n"), (2.0, "m")]), ordered=False
    )


def test_order_by_only_at_the_top_level_counts():
    assert is_ordered("SELECT a FROM t ORDER BY a")
    assert not is_ordered("SELECT a FROM (SELECT a FROM t ORDER BY a LIMIT 3)")
    assert is_ordered("SELECT a FROM t UNION SELECT b FROM u ORDER BY 1")


def test_majority_wins_and_confidence_counts_failures():
    cands = [
        cand("SELECT 1", [[1]], sample=0),
        cand("SELECT 2", [[2]], sample=1),
        cand("SELECT 2 + 0", [[2]], sample=2),
        cand("SELECT x", [], error="no such column: x", sample=3),
    ]
    outcome = vote(cands)
    assert outcome.winner is cands[1]
    assert outcome.confidence == pytest.approx(0.5)
    assert [len(g) for g in outcome.groups] == [2, 1]


def test_empty_vote_when_every_candidate_failed():
    outcome = vote([cand("SELECT x", [], error="boom"), Candidate(sql="")])
    assert outcome.winner is None and outcome.confidence == 0.0 and outcome.considered == 2


def test_tie_breaks():
    first = cand("SELECT a, b, c FROM t", [[1]], sample=0, repairs=2)
    second = cand("SELECT a FROM t", [[2]], sample=1, repairs=0)
    assert vote([first, second]).winner is first
    assert vote([first, second], tie_break="fewest_repairs").winner is second
    assert vote([first, second], tie_break="shortest").winner is second
    with pytest.raises(ValueError, match="tie-break"):
        vote([first], tie_break="random")


def test_a_non_empty_result_beats_an_empty_one_of_the_same_size():
    empty = cand("SELECT a FROM t WHERE 0", [], sample=0)
    rows = cand("SELECT a FROM t", [[1]], sample=1)
    assert vote([empty, rows]).winner is rows


def test_all_null_results_count_as_empty():
    nothing = [cand("SELECT sum(a) FROM t WHERE 0", [[None]], sample=i) for i in range(2)]
    rows = cand("SELECT sum(a) FROM t", [[3]], sample=2)
    assert agreement(nothing) is None  # two agreeing NULLs are no answer
    assert vote([nothing[0], rows]).winner is rows
