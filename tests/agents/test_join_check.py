"""Joins that link nothing (a column compared with itself, an ON reading one side only) are
named; proper joins, USING, CROSS JOIN and unqualified conditions are not judged."""

from __future__ import annotations

import json

import pytest

from agents.answer import Candidate
from agents.sql.join_check import unlinked_joins
from agents.sql.refine import RefineOptions, Refiner
from tests.agents.conftest import SPIDER
from tests.agents.scripted import ScriptedLLM, sql_reply

ASKED = [{"role": "user", "content": "Which singers sang in which concerts?"}]
SELF = (
    "SELECT s.name, c.concert_name FROM singer AS s "
    "JOIN singer_in_concert AS sc ON s.singer_id = s.singer_id "
    "JOIN concert AS c ON c.concert_id = sc.concert_id"
)
LINKED = (
    "SELECT s.name, c.concert_name FROM singer AS s "
    "JOIN singer_in_concert AS sc ON s.singer_id = sc.singer_id "
    "JOIN concert AS c ON c.concert_id = sc.concert_id"
)


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])  # the database's name for it
def test_a_column_compared_with_itself_is_named(dialect):
    (problem,) = unlinked_joins(SELF, dialect)
    assert problem.startswith("JOIN sc ON s.singer_id = s.singer_id")
    assert "compares s.singer_id with itself" in problem


@pytest.mark.parametrize(
    "sql, side",
    [
        ("SELECT * FROM singer AS s JOIN concert AS c ON c.year = '2014'", "reads only c"),
        ("SELECT * FROM singer JOIN concert ON singer.age > 30", "reads only singer"),
        # a subquery's own join is judged too
        (
            "SELECT name FROM singer WHERE singer_id IN (SELECT a.singer_id FROM "
            "singer_in_concert AS a JOIN concert AS b ON a.concert_id = a.singer_id)",
            "reads only a",
        ),
    ],
)
def test_an_on_reading_one_side_only_is_named(sql, side):
    (problem,) = unlinked_joins(sql)
    assert side in problem and "does not link" in problem


@pytest.mark.parametrize(
    "sql",
    [
        LINKED,
        "SELECT * FROM singer JOIN singer_in_concert USING (singer_id)",
        "SELECT * FROM singer CROSS JOIN concert",
        "SELECT * FROM singer, concert WHERE singer.singer_id = concert.concert_id",
        "SELECT * FROM singer JOIN singer_in_concert ON singer_id = concert_id",  # unqualified
        "SELECT * FROM singer AS s JOIN (SELECT 1 AS x) AS t ON t.x = s.singer_id",
        "SELECT * FROM singer AS s LEFT JOIN concert AS c ON c.year = '2014' AND "
        "c.concert_id = s.singer_id",
        "not sql at all (",
    ],
)
def test_linked_unjudged_and_unparsable_queries_are_not_named(sql):
    assert unlinked_joins(sql) == []


def test_spider_dev_gold_queries_never_trip_the_check():
    path = SPIDER.parent / "dev.json"
    if not path.exists():
        pytest.skip(f"Spider dev questions not found at {path}")
    questions = json.loads(path.read_text(encoding="utf-8"))
    flagged = [q["query"] for q in questions if unlinked_joins(q["query"])]
    assert flagged == []


def test_refine_shows_the_model_a_join_that_links_nothing(concert):
    _, database, _ = concert
    llm = ScriptedLLM([sql_reply(LINKED)])
    ran = Refiner(database, llm).refine(Candidate(sql=SELF), ASKED)
    assert ran.sql.endswith(LINKED) and ran.repairs == 1 and ran.results.has_data
    prompt = llm.calls[0][0][-1]["content"]
    assert "compares s.singer_id with itself" in prompt and "paired" in prompt
    # the check can be turned off: the query is kept as it ran
    off = Refiner(database, ScriptedLLM([]), options=RefineOptions(check_joins=False))
    assert off.refine(Candidate(sql=SELF), ASKED).sql == SELF


def test_a_repair_that_fails_leaves_the_query_that_ran(concert):
    _, database, _ = concert
    llm = ScriptedLLM([sql_reply("SELECT nme FROM singer"), sql_reply("SELECT nme FROM singr")])
    kept = Refiner(database, llm).refine(Candidate(sql=SELF), ASKED)
    assert kept.sql == SELF and kept.results.has_data and len(llm.calls) == 2
    assert "repairs gave no rows: the query that ran is kept" in kept.notes
    # with no model to ask, the query stays as it ran
    alone = Refiner(database).refine(Candidate(sql=SELF), ASKED)
    assert alone.sql == SELF and alone.results.has_data
