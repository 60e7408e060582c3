"""Refinement: execution, repair rounds and predicate checks against the profiled values."""

from __future__ import annotations

import pytest

from agents.answer import Candidate
from agents.sql.predicates import PredicateChecker
from agents.sql.refine import RefineOptions, Refiner
from tests.agents.scripted import ScriptedLLM, sql_reply

ASKED = [{"role": "user", "content": "Names of singers from France?"}]


@pytest.fixture
def checker(concert):
    store, _, _ = concert
    return PredicateChecker(store, "concert_singer")


def test_a_database_error_is_sent_back_and_repaired(concert, checker):
    _, database, _ = concert
    llm = ScriptedLLM([sql_reply("SELECT name FROM singer WHERE country = 'France'")])
    bad = Candidate(sql="SELECT nme FROM singer")
    fixed = Refiner(database, llm, checker).refine(bad, ASKED)
    assert fixed.ok and fixed.repairs == 1 and fixed.results.row_count == 4
    history, options = llm.calls[0]
    assert history[: len(ASKED)] == ASKED, "the original prompt is kept (prompt cache)"
    assert "SELECT nme FROM singer" in history[-2]["content"]
    assert "nme" in history[-1]["content"] and options["temperature"] == 0.0


def test_a_wrong_case_literal_is_fixed_without_the_model(concert, checker):
    _, database, _ = concert
    llm = ScriptedLLM([AssertionError("the model must not be asked")])
    cand = Candidate(sql="SELECT name FROM singer AS s WHERE s.country = 'france'")
    fixed = Refiner(database, llm, checker).refine(cand, ASKED)
    assert fixed.ok and fixed.results.row_count == 4 and llm.calls == []
    assert "'France'" in fixed.sql and any("predicate fixed" in n for n in fixed.notes)


def test_a_misspelled_literal_gets_the_closest_stored_values_in_the_repair_prompt(concert, checker):
    _, database, _ = concert
    llm = ScriptedLLM([sql_reply("SELECT name FROM singer WHERE country = 'France'")])
    # even the closest stored value returns nothing here: the model is asked, and told it
    cand = Candidate(sql="SELECT name FROM singer WHERE country IN ('Frence') AND age > 1000")
    issues = checker.check(cand.sql)
    assert [(i.column, i.literal, i.suggestions[0], i.certain) for i in issues] == [
        ("country", "Frence", "France", False)
    ]
    fixed = Refiner(database, llm, checker).refine(cand, ASKED)
    assert fixed.ok and fixed.results.row_count == 4
    assert "'France'" in llm.calls[0][0][-1]["content"]


def test_a_single_close_stored_value_is_tried_and_kept_when_it_returns_data(concert, checker):
    _, database, _ = concert
    llm = ScriptedLLM([AssertionError("the model must not be asked")])
    cand = Candidate(sql="SELECT name FROM singer WHERE country = 'Frence'")
    fixed = Refiner(database, llm, checker).refine(cand, ASKED)
    assert fixed.ok and fixed.results.row_count == 4 and llm.calls == []
    assert "'France'" in fixed.sql and any(n.startswith("predicate guessed") for n in fixed.notes)


def test_an_aggregate_over_no_rows_is_repaired_like_an_empty_result(concert, checker):
    _, database, _ = concert
    llm = ScriptedLLM([sql_reply("SELECT avg(age) FROM singer WHERE country = 'France'")])
    cand = Candidate(sql="SELECT avg(age) FROM singer WHERE country = 'Atlantis'")
    fixed = Refiner(database, llm, checker).refine(cand, ASKED)
    assert fixed.ok and fixed.repairs == 1 and fixed.results.has_data
    problem = llm.calls[0][0][-1]["content"]
    assert "returned only NULL" in problem and "'Atlantis' is not a value" in problem
    # a NULL next to data is an answer
    kept = Refiner(database, llm, checker).refine(
        Candidate(sql="SELECT name, NULL FROM singer WHERE country = 'France'"), ASKED
    )
    assert kept.repairs == 0 and len(llm.calls) == 1


def test_a_write_is_refused_and_never_runs(concert, checker):
    _, database, _ = concert
    llm = ScriptedLLM([sql_reply("WITH x AS (DELETE FROM singer RETURNING *) SELECT * FROM x")])
    cand = Candidate(sql="DROP TABLE singer")
    out = Refiner(database, llm, checker, RefineOptions(rounds=2)).refine(cand, ASKED)
    assert not out.ok and out.results.error_kind == "refused" and out.repairs == 2
    assert database.execute("SELECT count(*) FROM singer").rows == [(6,)]


def test_rounds_are_bounded_and_zero_rounds_only_executes(concert, checker):
    _, database, _ = concert
    llm = ScriptedLLM([sql_reply(f"SELECT still_wrong_{i} FROM singer") for i in range(5)])
    out = Refiner(database, llm, checker, RefineOptions(rounds=3)).refine(
        Candidate(sql="SELECT nope FROM singer"), ASKED
    )
    assert not out.ok and out.repairs == 3 and len(llm.calls) == 3
    only = Refiner(database, llm, checker, RefineOptions(rounds=0)).refine(
        Candidate(sql="SELECT nope FROM singer"), ASKED
    )
    assert not only.ok and only.repairs == 0 and len(llm.calls) == 3


def test_checker_ignores_numbers_unknown_columns_and_unparseable_sql(checker):
    assert checker.check("SELECT name FROM singer WHERE age = 30") == []
    assert checker.check("SELECT name FROM singer WHERE country = 'France'") == []
    assert checker.check("SELECT name FROM singer WHERE nickname = 'Bob'") == []
    assert checker.check("SELEC nonsense (((") == []


def test_repairs_stop_when_the_model_writes_a_query_it_already_wrote(concert, checker):
    _, database, _ = concert
    llm = ScriptedLLM(
        [sql_reply("SELECT still_wrong FROM singer"), sql_reply("SELECT nope  FROM singer;")]
    )
    out = Refiner(database, llm, checker, RefineOptions(rounds=3)).refine(
        Candidate(sql="-- first try\nSELECT nope FROM singer"), ASKED
    )
    assert not out.ok and out.repairs == 2 and len(llm.calls) == 2
    assert out.notes[-1] == "repairs stopped: the same query again"
