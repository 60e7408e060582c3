"""Extracting SQL from the shapes model replies come in."""

from __future__ import annotations

import pytest

from agents.sql.extract import NoSQLError, extract_sql, strip_comments


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
