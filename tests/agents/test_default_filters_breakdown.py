"""A default filter that leaves rows out where the query breaks its rows down ("headquarters
is no sales region: rankings and shares of regions leave it out"): added to a ranking or a
share that counted headquarters in, never to a total, a query that chose its regions, or
one that already left headquarters out; and through the refine agent on a real database."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agents.answer import Candidate
from agents.sql.default_filters import DefaultFilter, filter_of, with_default_filters
from agents.sql.refine import RefineOptions, Refiner
from kb.target.database import Database
from ukf import RuleUKF

SPEC = {"column": "region_code", "op": "<>", "value": "HQ",
        "breakdown": ["region_code", "region_name"]}  # fmt: skip
RULE = "Headquarters excluded from regional rankings"
NO_HQ = DefaultFilter("region_code", "HQ", RULE, op="<>", breakdown=("region_code", "region_name"))
COLUMNS = {"income": {"period", "region_code", "region_name", "amount"}, "fx": {"rate"}}


def _added(sql: str) -> str | None:
    filtered = with_default_filters(sql, [NO_HQ], COLUMNS, "sqlite")
    return None if filtered is None else filtered.sql


def test_the_rule_s_resource_reads_as_an_exclusion_by_breakdown():
    rule = RuleUKF.create(RULE, RULE, kind="validity", database="fin",
                          content_resources={"default_filter": SPEC})  # fmt: skip
    assert filter_of(rule) == NO_HQ
    assert NO_HQ.condition == "region_code <> 'HQ'"
    for bad in ({"op": "!="}, {"op": "LIKE"}, {"breakdown": "region_code"}, {"breakdown": ["a b"]}):
        spec = {**SPEC, **bad}
        broken = RuleUKF.create("bad", "bad", kind="validity", database="fin",
                                content_resources={"default_filter": spec})  # fmt: skip
        assert filter_of(broken) is None, bad


def test_rankings_and_shares_of_regions_leave_headquarters_out():
    ranking = "SELECT region_name, SUM(amount) AS r FROM income WHERE period = '202509' "
    assert _added(ranking + "GROUP BY region_name ORDER BY r DESC") == (
        ranking + "AND income.region_code <> 'HQ' GROUP BY region_name ORDER BY r DESC"
    )
    share = (
        "SELECT SUM(CASE WHEN region_code = 'EUR' THEN amount ELSE 0 END) / SUM(amount) "
        "FROM income WHERE period = '202406'"
    )
    assert _added(share) == share + " AND income.region_code <> 'HQ'"
    # the total a share divides by is of the same rows
    of_total = _added(
        "SELECT region_name, SUM(amount) / (SELECT SUM(amount) FROM income) FROM income "
        "GROUP BY region_name"
    )
    assert of_total is not None and of_total.count("income.region_code <> 'HQ'") == 2
    # only the SELECT that breaks down: here the inner one, not the outer total
    nested = _added(
        "SELECT MAX(t) FROM (SELECT region_code, SUM(amount) AS t FROM income GROUP BY region_code)"
    )
    assert nested == (
        "SELECT MAX(t) FROM (SELECT region_code, SUM(amount) AS t FROM income "
        "WHERE income.region_code <> 'HQ' GROUP BY region_code)"
    )


@pytest.mark.parametrize(
    "sql",
    [
        # a total breaks nothing down: headquarters is part of the brand
        "SELECT SUM(amount) FROM income WHERE period = '202406'",
        # the query chose its regions, or already left headquarters out
        "SELECT region_code, SUM(amount) FROM income WHERE region_code IN ('EUR', 'NAM') "
        "GROUP BY region_code",
        "SELECT region_name, SUM(amount) FROM income WHERE region_code <> 'HQ' "
        "GROUP BY region_name",
        "SELECT region_name, SUM(amount) FROM income GROUP BY region_name "
        "HAVING region_name <> 'Headquarters'",
        # the query asks about headquarters itself: its share, HQ against the regions
        "SELECT SUM(CASE WHEN region_code = 'HQ' THEN amount ELSE 0 END) / SUM(amount) FROM income",
        "SELECT CASE WHEN region_code = 'HQ' THEN 'HQ' ELSE 'regions' END AS k, SUM(amount) "
        "FROM income GROUP BY k",
        # a join that picks the regions by value
        "SELECT i.region_name, SUM(i.amount) FROM income AS i JOIN fx AS f "
        "ON i.region_code = 'EUR' AND f.rate > 0 GROUP BY i.region_name",
        # broken down by something else, or by a table without the column
        "SELECT period, SUM(amount) FROM income GROUP BY period",
        "SELECT rate, COUNT(*) FROM fx GROUP BY rate",
    ],
)
def test_nothing_is_added_to_a_total_or_a_query_that_chose_its_regions(sql):
    assert _added(sql) is None


@pytest.fixture
def regions(tmp_path: Path):
    path = tmp_path / "regions.sqlite"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE income (region_code TEXT, region_name TEXT, amount REAL)")
        rows = [("EUR", "Europe", 30.0), ("NAM", "North America", 50.0), ("HQ", "HQ", 20.0)]
        connection.executemany("INSERT INTO income VALUES (?, ?, ?)", rows)
    database = Database(f"sqlite:///{path}")
    yield database
    database.close()


def test_the_refine_agent_gives_europe_s_share_of_the_sales_regions(regions):
    refiner = Refiner(regions, None, options=RefineOptions(default_filters=(NO_HQ,)))
    share = (
        "SELECT SUM(CASE WHEN region_code = 'EUR' THEN amount ELSE 0 END) / SUM(amount) AS s "
        "FROM income"
    )
    ran = refiner.refine(Candidate(sql=share), [])
    assert ran.ok and ran.results.rows == [(0.375,)]  # 30 of 80, not 30 of 100
    assert ran.notes == [f"default filter added: region_code <> 'HQ' ({RULE})"]
    total = refiner.refine(Candidate(sql="SELECT SUM(amount) FROM income"), [])
    assert total.results.rows == [(100.0,)] and total.notes == []
