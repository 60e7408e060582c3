"""The CoT consistency checker: a right explanation passes; explanations that name an absent
column or value, leave a filter, join, grouping, ordering or aggregate unexplained, or are
not numbered steps fail, each with a reason saying what."""

from __future__ import annotations

import pytest

from agents.learn.cot import CotCheckError, check_cot, steps_of

SCHEMA = ["singer", "concert", "stadium", "name", "country", "age", "song_release_year"]
QUESTION = "How many singers from France are older than 30?"
SQL = "SELECT count(*) FROM singer WHERE country = 'France' AND age > 30"
RIGHT = """1. "singers" are rows of the `singer` table.
2. "from France" is the filter `country` = 'France'.
3. "older than 30" is the filter `age` > 30.
4. "How many" counts the rows that remain: count(*)."""

JOINED = (
    "SELECT T2.name, count(*) FROM concert AS T1 JOIN stadium AS T2 "
    "ON T1.stadium_id = T2.stadium_id GROUP BY T1.stadium_id ORDER BY count(*) DESC LIMIT 1"
)
JOINED_RIGHT = """1. Join `concert` with `stadium` on `stadium_id`.
2. Group the concerts by each `stadium_id`.
3. Count the concerts per stadium, order by that count, highest first, and keep the top 1.
4. Show the stadium's `name`."""


def _reasons(explanation: str, sql: str = SQL, question: str = QUESTION) -> list[str]:
    return check_cot(question, sql, explanation, schema_names=SCHEMA).reasons


def test_a_right_explanation_passes():
    verdict = check_cot(QUESTION, SQL, RIGHT, schema_names=SCHEMA)
    assert verdict.passed and verdict.reasons == [] and verdict.to_dict()["passed"]
    assert _reasons(JOINED_RIGHT, JOINED, "Which stadium has the most concerts?") == []


def test_naming_a_column_the_sql_does_not_read_fails():
    wrong = RIGHT.replace("`age` > 30", "`song_release_year` > 30")
    reasons = _reasons(wrong)
    assert "named but not in the SQL: name song_release_year" in reasons
    assert "unexplained filter age > 30" in reasons  # and the age filter is now unexplained
    bare = RIGHT + "\n5. Song_release_year is not needed."  # a bare schema name counts too
    assert _reasons(bare) == ["named but not in the SQL: name Song_release_year"]


def test_leaving_a_filter_unexplained_fails():
    wrong = RIGHT.replace('3. "older than 30" is the filter `age` > 30.\n', "")
    verdict = check_cot(QUESTION, SQL, wrong, schema_names=SCHEMA)
    assert verdict.reasons == ["unexplained filter age > 30"]
    assert verdict.kinds == ["unexplained filter"]


def test_a_wrong_literal_fails():
    assert _reasons(RIGHT.replace("'France'", "'Germany'")) == [
        "named but not in the SQL: literal 'Germany'"
    ]
    assert _reasons(RIGHT.replace("`age` > 30", "`age` > 40")) == [
        "named but not in the SQL: number 40"
    ]


def test_a_wrong_function_or_sql_fragment_fails():
    wrong = RIGHT.replace('4. "How many" counts the rows that remain: count(*).', "4. `SUM(age)`.")
    reasons = _reasons(wrong)
    assert "named but not in the SQL: function SUM" in reasons
    assert "unexplained aggregate COUNT(*)" in reasons
    quoted = RIGHT + "\n5. \"WHERE age > 30 AND country = 'France'\" keeps them."
    assert _reasons(quoted) == []  # a quoted SQL fragment of the SQL itself is fine
    words = RIGHT + "\n5. 'SELECT' and 'FROM' read them; the `filter` above keeps them."
    assert _reasons(words) == []  # SQL keywords and the prompt's part words name nothing


def test_joins_grouping_and_ordering_must_be_explained():
    no_join = JOINED_RIGHT.replace("1. Join `concert` with `stadium` on `stadium_id`.", "1. x")
    no_join = no_join.replace("each `stadium_id`", "stadium")  # nothing says how they meet
    reasons = _reasons(no_join, JOINED)
    assert "unexplained join concert.stadium_id = stadium.stadium_id" in reasons
    no_order = JOINED_RIGHT.replace(", order by that count, highest first, and keep the top 1", "")
    assert "unexplained ordering by COUNT(*)" in _reasons(no_order, JOINED)
    no_group = JOINED_RIGHT.replace("2. Group the concerts by each `stadium_id`.\n", "")
    no_group = no_group.replace(" per stadium", "").replace("on `stadium_id`", "")
    assert any(r.startswith("unexplained grouping by") for r in _reasons(no_group, JOINED))


def test_copying_the_prompts_parts_list_instead_of_the_question_fails():
    parroted = RIGHT.replace('"from France"', "\"filter country = 'France'\"")
    verdict = check_cot(QUESTION, SQL, parroted, schema_names=SCHEMA)
    assert verdict.kinds == ["copied the SQL's parts list, not the question's phrases"]


def test_prose_without_numbered_steps_fails():
    verdict = check_cot(QUESTION, SQL, "It counts French singers over 30.")
    assert not verdict.passed and verdict.kinds == ["not numbered steps"]
    assert steps_of("1. a\n  more\n2) b\nStep 3: c") == ["a more", "b", "c"]


def test_an_unreadable_sql_is_an_error_naming_it():
    with pytest.raises(CotCheckError, match="SELEC nonsense"):
        check_cot(QUESTION, "SELEC nonsense FROM", RIGHT)
