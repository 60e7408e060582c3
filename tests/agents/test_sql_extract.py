"""Extracting SQL from the shapes model replies come in."""

from __future__ import annotations

import pytest

from agents.sql.extract import NoSQLError, extract_sql, statement_only, strip_comments


def test_fenced_block_with_comment_header_and_prose():
    reply = (
        "Here is the query:\n```sql\n-- Tables: singer\n-- Reasoning: filter by country\n"
        "SELECT name FROM singer WHERE country = 'France';\n```\nThis returns the names."
    )
    found = extract_sql(reply)
    assert strip_comments(found.sql) == "SELECT name FROM singer WHERE country = 'France'"
    assert found.sql.startswith("-- Tables: singer")
    assert "filter by country" in found.reasoning and "Here is the query" in found.reasoning


def test_last_sql_block_wins_and_unclosed_fence():
    reply = "```sql\nSELECT 1\n```\nBetter:\n```sql\nSELECT 2\n```"
    assert strip_comments(extract_sql(reply).sql) == "SELECT 2"
    assert strip_comments(extract_sql("```sql\nSELECT a FROM t").sql) == "SELECT a FROM t"


def test_bare_statement_is_cut_at_the_first_semicolon_outside_quotes():
    reply = "SELECT name FROM t WHERE note = 'a;b'; DROP TABLE t;"
    assert extract_sql(reply).sql == "SELECT name FROM t WHERE note = 'a;b'"


def test_statement_followed_by_prose_after_a_blank_line():
    reply = "WITH x AS (SELECT 1 AS v)\nSELECT v FROM x\n\nThis query selects v."
    assert extract_sql(reply).sql == "WITH x AS (SELECT 1 AS v)\nSELECT v FROM x"


@pytest.mark.parametrize("reply", ["", "I cannot answer that.", "```python\nprint(1)\n```"])
def test_replies_without_sql_raise_with_the_text(reply):
    with pytest.raises(NoSQLError) as caught:
        extract_sql(reply)
    assert caught.value.reply == reply


def test_statement_only_drops_the_comment_lines_around_the_statement():
    sql = (
        "-- Tables: singer\n-- Reasoning: filter by country\n/* a block\n   over lines */\n"
        "SELECT name FROM singer\nWHERE country = 'France'\n-- done\n/* end */"
    )
    assert statement_only(sql) == "SELECT name FROM singer\nWHERE country = 'France'"


def test_statement_only_keeps_comments_inside_the_statement_and_after_sql_on_a_line():
    sql = (
        "/* hint */ SELECT a -- the a column\n-- why the filter\nFROM t /* t is big */\n"
        "WHERE b = 1 -- last"
    )
    assert statement_only(sql) == sql


def test_statement_only_leaves_a_comment_like_line_inside_a_string_literal():
    sql = "SELECT a FROM t WHERE note = 'line one\n-- not a comment'"
    assert statement_only(sql) == sql
    assert statement_only("-- only a comment\n/* and a block */") == ""
