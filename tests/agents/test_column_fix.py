"""Column references qualified with the wrong table are moved by the schema, not the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.answer import Candidate
from agents.sql.column_fix import ColumnQualifierFix
from agents.sql.refine import RefineOptions, Refiner
from kb.target.database import Database
from tests.agents.scripted import ScriptedLLM, sql_reply

SCHEMA = """
CREATE TABLE student (stu_id INTEGER PRIMARY KEY, name TEXT, age INTEGER);
CREATE TABLE pet (pet_id INTEGER PRIMARY KEY, kind TEXT, weight REAL);
CREATE TABLE has_pet (stu_id INTEGER, pet_id INTEGER, since TEXT);
INSERT INTO student VALUES (1, 'Ann', 20), (2, 'Bo', 23);
INSERT INTO pet VALUES (10, 'cat', 3.5), (11, 'dog', 12.0);
INSERT INTO has_pet VALUES (1, 10, '2020'), (2, 11, '2021');
"""


@pytest.fixture
def database(tmp_path: Path):
    import sqlite3

    path = tmp_path / "pets.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript(SCHEMA)
    db = Database(f"sqlite:///{path}")
    yield db
    db.close()


def test_a_column_of_the_other_joined_table_is_requalified(database):
    sql = "SELECT AVG(T2.age) FROM student AS T1 JOIN has_pet AS T2 ON T1.stu_id = T2.stu_id"
    moved = ColumnQualifierFix(database).apply(sql)
    assert moved is not None and moved.notes == ["T2.age -> T1.age"]
    assert "AVG(T1.age)" in moved.sql and database.execute(moved.sql).ok


def test_a_table_the_query_never_reads_is_replaced_by_the_one_that_has_the_column(database):
    sql = "SELECT pet.since, pet.since FROM has_pet JOIN student ON has_pet.stu_id = student.stu_id"
    moved = ColumnQualifierFix(database).apply(sql)
    assert moved is not None and moved.notes == ["pet.since -> has_pet.since"]


@pytest.mark.parametrize(
    "sql",
    [
        # pet has no stu_id, and two other tables have one: ambiguous, the model decides
        "SELECT T3.stu_id FROM student AS T1 JOIN has_pet AS T2 ON T1.stu_id = T2.stu_id "
        "JOIN pet AS T3 ON T2.pet_id = T3.pet_id",
        # no table of the query has the column
        "SELECT T1.colour FROM student AS T1 JOIN has_pet AS T2 ON T1.stu_id = T2.stu_id",
        # a correlated reference to the enclosing query is not this scope's business
        "SELECT name FROM student AS s WHERE EXISTS "
        "(SELECT 1 FROM has_pet AS h WHERE h.stu_id = s.stu_id AND s.age > 1)",
        # a derived table's columns are not in the schema
        "SELECT t.kind FROM (SELECT stu_id FROM student) AS t JOIN pet AS p ON p.pet_id = t.stu_id",
        # correct already, and text that is no SQL at all
        "SELECT T1.name FROM student AS T1 JOIN has_pet AS T2 ON T1.stu_id = T2.stu_id",
        "SELECT FROM WHERE (",
    ],
)
def test_nothing_ambiguous_or_unknown_is_touched(database, sql):
    assert ColumnQualifierFix(database).apply(sql) is None


BAD = (
    "SELECT T2.kind FROM has_pet AS T1 JOIN pet AS T2 ON T1.pet_id = T2.pet_id WHERE T1.weight > 5"
)
ASKED = [{"role": "user", "content": "heavy pets?"}]


def test_without_a_model_to_ask_refine_moves_the_column(database):
    fixed = Refiner(database, None).refine(Candidate(sql=BAD), ASKED)
    assert fixed.ok and fixed.results.rows == [("dog",)]
    assert fixed.repairs == 0 and fixed.notes == ["column moved: T1.weight -> T2.weight"]
    off = Refiner(database, None, options=RefineOptions(fix_columns=False))
    unfixed = off.refine(Candidate(sql=BAD), ASKED)
    assert not unfixed.ok and "weight" in (unfixed.results.error or "")


def test_the_model_repairs_first_and_the_column_fix_is_the_last_resort(database):
    good = "SELECT kind FROM pet WHERE weight > 5"
    llm = ScriptedLLM([sql_reply(good)])
    repaired = Refiner(database, llm).refine(Candidate(sql=BAD), ASKED)
    assert repaired.ok and repaired.repairs == 1 and repaired.sql.endswith(good)
    assert not any("column moved" in n for n in repaired.notes)
    stubborn = ScriptedLLM([sql_reply(BAD)])  # the model repeats the same mistake: one round
    fixed = Refiner(database, stubborn).refine(Candidate(sql=BAD), ASKED)
    assert len(stubborn.calls) == 1 and fixed.ok and fixed.repairs == 1
    assert fixed.notes[-2:] == [
        "repairs stopped: the same query again",
        "column moved: T1.weight -> T2.weight",
    ]
