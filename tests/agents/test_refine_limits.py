"""The refiner's time limits: the target's limit for every query, and the question's deadline."""

from __future__ import annotations

import sqlite3
import time

import pytest

from agents.answer import Candidate
from agents.sql.refine import DEADLINE_NOTE, RefineOptions, Refiner
from kb.target.database import Database
from tests.agents.scripted import ScriptedLLM

RUNAWAY = "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM r) SELECT count(*) FROM r"
ASKED = [{"role": "user", "content": "How many?"}]


@pytest.fixture()
def database(tmp_path):
    path = tmp_path / "t.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x INTEGER)")
        conn.execute("INSERT INTO t VALUES (1)")
    with Database(f"sqlite:///{path}", timeout_s=0.3) as db:
        yield db


def timed(refiner: Refiner, sql: str) -> tuple[Candidate, float]:
    started = time.monotonic()
    candidate = refiner.execute(Candidate(sql=sql))
    return candidate, time.monotonic() - started


@pytest.mark.parametrize("timeout_s", [None, 30.0])
def test_every_query_stops_at_the_databases_limit(database, timeout_s):
    refiner = Refiner(database, options=RefineOptions(timeout_s=timeout_s))
    candidate, took = timed(refiner, RUNAWAY)
    assert candidate.results.error_kind == "timeout" and took < 1.5, took


def test_a_lower_limit_of_the_options_holds(database):
    candidate, took = timed(Refiner(database, options=RefineOptions(timeout_s=0.05)), RUNAWAY)
    assert candidate.results.error_kind == "timeout" and took < 0.25, took


def test_a_query_gets_at_most_the_time_left_before_the_deadline(tmp_path):
    path = tmp_path / "slow.sqlite"
    sqlite3.connect(path).close()
    with Database(f"sqlite:///{path}", timeout_s=5.0) as db:
        options = RefineOptions(deadline=time.monotonic() + 0.2)
        candidate, took = timed(Refiner(db, options=options), RUNAWAY)
    assert candidate.results.error_kind == "timeout" and took < 1.0, took


def test_past_the_deadline_nothing_runs_and_the_model_is_not_asked(database):
    llm = ScriptedLLM([AssertionError("no repair after the deadline")])
    options = RefineOptions(deadline=time.monotonic() - 1)
    refined = Refiner(database, llm, options=options).refine(
        Candidate(sql="SELECT x FROM t"), ASKED
    )
    assert refined.results.error.startswith("not run") and DEADLINE_NOTE in refined.notes
    assert llm.calls == []


def test_repairs_stop_when_the_deadline_passes(database):
    replies = iter(range(100))
    llm = ScriptedLLM([lambda m, o: f"```sql\n{RUNAWAY} WHERE {next(replies)} >= 0\n```"])
    options = RefineOptions(rounds=10, deadline=time.monotonic() + 0.7)
    started = time.monotonic()
    refined = Refiner(database, llm, options=options).refine(Candidate(sql=RUNAWAY), ASKED)
    assert time.monotonic() - started < 1.5 and len(llm.calls) <= 3
    assert DEADLINE_NOTE in refined.notes
