"""The default filters AutoFin's knowledge pack carries (the caliber rules, the narrow
tables' currency, the one-report-item metrics, headquarters left out of rankings and shares
of regions), the asker's own brand tables for "our", and the period the question's time
words settle, never change a gold query: they only ever fix a query that left them out."""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing

import pytest

from agents.rag.question_facts import pin_among
from agents.sql.default_filters import filters_of, with_default_filters
from agents.sql.period_pin import with_pinned_period
from agents.sql.profile_tables import own_tables_among, with_own_tables
from bench.autofin.pipeline import Summary
from bench.datasets import load_almanac_jsonl
from kb.jsonl import read_jsonl as read_ukf_jsonl
from ukf import QueryContext

pytestmark = pytest.mark.slow  # the AutoFin build (conftest.py)


def test_the_default_filters_of_the_rules_never_change_a_gold_query(built: Summary) -> None:
    """The caliber and currency rules and the one-report-item metrics carry their filter as
    data (added by the chain to a query that forgot it); every gold query already says the
    caliber, currency and report item its asker's rules and named metrics would add, so the
    filters only ever fix a query that left them out."""
    rules = [e for e in read_ukf_jsonl(built.out / "knowledge.jsonl") if e.type == "rule"]
    with closing(sqlite3.connect(built.out / "autofin.sqlite")) as connection:
        tables = [r[0] for r in connection.execute("SELECT name FROM sqlite_master")]
        columns = {
            t.lower(): {r[1].lower() for r in connection.execute(f"PRAGMA table_info('{t}')")}
            for t in tables
        }
    eur = filters_of(
        r
        for r in rules
        if r.triggered(QueryContext(user_profile={"region": "EUR", "caliber": "B"}))
    )
    assert {(f.column, f.value) for f in eur} == {
        ("caliber", "B"),
        ("currency", "EUR"),
        ("region_code", "HQ"),
    }
    plain = filters_of(r for r in rules if r.triggered(QueryContext()))
    assert [(f.column, f.op, f.value) for f in plain] == [
        ("region_code", "<>", "HQ"),  # rankings and shares of regions leave HQ out
        ("caliber", "=", "A"),
    ]
    share = (
        "SELECT SUM(CASE WHEN region_code = 'EUR' THEN ptd_amt_usd ELSE 0 END) / "
        "SUM(ptd_amt_usd) AS share FROM income_orion WHERE period = '202406' AND caliber = 'B'"
    )
    no_hq = with_default_filters(share, plain, columns, "sqlite")
    assert no_hq is not None and no_hq.sql == share + " AND income_orion.region_code <> 'HQ'"
    forgot = "SELECT SUM(ptd_amt_usd) FROM income_nova WHERE period = '202406'"
    added = with_default_filters(forgot, eur, columns, "sqlite")
    assert added is not None and added.sql.endswith("AND income_nova.caliber = 'B'")
    metrics = [e for e in read_ukf_jsonl(built.out / "knowledge.jsonl") if e.type == "metric"]
    rows_of = [m for m in metrics if "default_filter" in m.content_resources]
    assert {m.name for m in rows_of} == {"Revenue", "Cost of sales", "Operating expenses"}
    asked_as_ours = pinned = 0
    for q in load_almanac_jsonl(built.out / "questions.jsonl"):
        # a metric the question names (its name or a synonym as a word): as the string
        # index's span would
        named = {
            m.id
            for m in rows_of
            for word in (m.name, *m.synonyms)
            if re.search(rf"\b{re.escape(word)}\b", q.question, re.I)
        }
        applying = filters_of([*(r for r in rules if r.triggered(q.context)), *rows_of], named)
        own = own_tables_among(rules, q.question, q.context.user_profile)
        asked_as_ours += own is not None
        pin = pin_among((r for r in rules if r.triggered(q.context)), q.question, q.context)
        pinned += pin is not None
        for sql in q.gold_for("sqlite"):
            assert with_default_filters(sql, applying, columns, "sqlite") is None, (q.id, sql)
            assert own is None or with_own_tables(sql, own, "sqlite") is None, (q.id, sql)
            assert pin is None or with_pinned_period(sql, pin, "sqlite") is None, (q.id, sql)
    assert asked_as_ours > 50  # "our" questions of a brand's user read its tables
    assert pinned > 300  # most questions' time words settle one period
