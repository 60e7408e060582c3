"""Specification of `bench.autofin`: the AutoFin database, knowledge pack, profiles and questions.

One build (seed 7) is generated per module into a temporary folder and inspected; determinism is
checked by building again through the command line (same seed: same bytes; other seed: other
data). The PostgreSQL test loads the same tables into a fresh database and requires every
question's PostgreSQL gold SQL to return the rows of its SQLite gold SQL.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import shutil
import sqlite3
from collections import Counter
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest

from bench.autofin import calendar as cal
from bench.autofin import generate
from bench.autofin import rules as R
from bench.autofin.__main__ import main
from bench.autofin.catalog import BRANDS
from bench.autofin.data import build_tables
from bench.autofin.pipeline import Summary
from bench.autofin.questions import TRAITS
from bench.autofin.questions.slots import CONTEXT, PRIVATE, Ask
from bench.autofin.world import build_world
from bench.autofin.writer import load_postgres, psycopg_conninfo
from bench.datasets import Example, load_almanac_jsonl
from kb.jsonl import read_jsonl as read_ukf_jsonl
from kb.store import KnowledgeStore
from ukf import QueryContext

pytestmark = pytest.mark.slow
SEED = 7


# --- fixtures -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def db(built: Summary) -> Iterator[sqlite3.Connection]:
    uri = f"{(built.out / 'autofin.sqlite').as_uri()}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True)) as connection:
        yield connection


@pytest.fixture(scope="module")
def questions(built: Summary) -> list[Example]:
    return list(load_almanac_jsonl(built.out / "questions.jsonl"))


def scalar(db: sqlite3.Connection, sql: str) -> object:
    return db.execute(sql).fetchone()[0]


def digest(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


# --- the database ---------------------------------------------------------------------------


def test_tables_and_shapes(built: Summary, db: sqlite3.Connection) -> None:
    names = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    assert len(names) == 25
    for brand in BRANDS:
        assert {brand.income_table, brand.ledger_table} <= set(names)
        rows = scalar(db, f"SELECT COUNT(*) FROM {brand.income_table}")
        columns = len(db.execute(f"SELECT * FROM {brand.income_table} LIMIT 1").description)
        assert rows >= 35_000 and columns >= 65
    assert {"profit_and_loss", "budget_and_forecast", "regions", "customers"} <= set(names)
    assert {"vehicle_models", "report_items", "fx_rates", "fiscal_calendar"} <= set(names)
    assert built.manifest["tables"]["income_nova"] == {"rows": 40_320, "columns": 71}


def test_periods_are_2020_to_2025_as_text(db: sqlite3.Connection) -> None:
    periods = [r[0] for r in db.execute("SELECT DISTINCT period FROM income_titan ORDER BY 1")]
    assert periods == cal.span("202001", "202512")
    assert scalar(db, "SELECT typeof(period) FROM income_titan LIMIT 1") == "text"


def test_every_row_exists_in_both_calibers_with_different_amounts(db: sqlite3.Connection) -> None:
    counts = dict(db.execute("SELECT caliber, COUNT(*) FROM income_nova GROUP BY caliber"))
    assert counts == {"A": 20_160, "B": 20_160}
    a, b = db.execute(
        "SELECT SUM(CASE WHEN caliber = 'A' THEN ptd_amt_usd END), "
        "SUM(CASE WHEN caliber = 'B' THEN ptd_amt_usd END) FROM income_nova "
        "WHERE period = '202406' AND report_item_level1 = 'Revenue'"
    ).fetchone()
    assert a > b > 0


@pytest.mark.parametrize("kind, first", [("ytd", "202404"), ("qtd", "202410")])
def test_to_date_columns_are_running_sums_of_ptd(
    db: sqlite3.Connection, kind: str, first: str
) -> None:
    key = "caliber, area_code, customer_code, model_code, channel, report_item_code"
    for currency in ("usd", "eur", "jpy"):
        worst = scalar(
            db,
            f"SELECT MAX(ABS(s.total - t.{kind}_amt_{currency})) FROM "
            f"(SELECT {key}, SUM(ptd_amt_{currency}) AS total FROM income_aurora "
            f"WHERE period BETWEEN '{first}' AND '202412' GROUP BY {key}) s "
            f"JOIN income_aurora t USING ({key}) WHERE t.period = '202412'",
        )
        assert worst < 0.05


def test_prior_year_columns_equal_last_years_values(db: sqlite3.Connection) -> None:
    key = "caliber, area_code, customer_code, model_code, channel, report_item_code"
    mismatches = scalar(
        db,
        f"SELECT COUNT(*) FROM income_vega a JOIN income_vega b USING ({key}) "
        "WHERE a.period = '202502' AND b.period = '202402' AND ("
        "a.ptd_amt_py_eur <> b.ptd_amt_eur OR a.ytd_amt_py_usd <> b.ytd_amt_usd "
        "OR a.qtd_amt_py_cny <> b.qtd_amt_cny OR a.ytd_qty_py <> b.ytd_qty)",
    )
    joined = scalar(
        db,
        f"SELECT COUNT(*) FROM income_vega a JOIN income_vega b USING ({key}) "
        "WHERE a.period = '202502' AND b.period = '202402'",
    )
    assert joined == 560 and mismatches == 0


def test_profit_and_loss_aggregates_the_income_tables(db: sqlite3.Connection) -> None:
    income = scalar(
        db,
        "SELECT SUM(ytd_amt_gbp) FROM income_helix WHERE period = '202409' AND caliber = 'B' "
        "AND region_code = 'EUR' AND report_item_level1 = 'Revenue'",
    )
    pnl = scalar(
        db,
        "SELECT SUM(ytd_amt) FROM profit_and_loss WHERE period = '202409' AND caliber = 'B' "
        "AND dept_code = 'HX' AND region_code = 'EUR' AND currency = 'GBP' "
        "AND report_item_level1 = 'Revenue'",
    )
    assert math.isclose(income, pnl, rel_tol=1e-9)


def test_budgets_exist_for_caliber_a_scopes(db: sqlite3.Connection) -> None:
    scenarios = [r[0] for r in db.execute("SELECT DISTINCT scenario FROM budget_and_forecast")]
    assert sorted(scenarios) == ["Budget", "Forecast"]
    assert scalar(db, "SELECT COUNT(DISTINCT currency) FROM budget_and_forecast") == 5


def test_headquarters_is_present_and_tops_an_unfiltered_region_ranking(
    db: sqlite3.Connection,
) -> None:
    for brand in BRANDS:
        top = scalar(
            db,
            f"SELECT region_code FROM {brand.income_table} WHERE period = '202503' "
            "AND caliber = 'A' AND report_item_level1 = 'Revenue' GROUP BY region_code "
            "ORDER BY SUM(ytd_amt_usd) DESC LIMIT 1",
        )
        assert top == "HQ", brand.name


def test_sales_ledger_reconciles_with_vehicle_revenue(db: sqlite3.Connection) -> None:
    ledger = db.execute(
        "SELECT SUM(net_sales_usd), SUM(units) FROM sales_ledger_orion WHERE period = '202311'"
    ).fetchone()
    income = db.execute(
        "SELECT SUM(ptd_amt_usd), SUM(ptd_qty) FROM income_orion WHERE period = '202311' "
        "AND caliber = 'A' AND report_item_code = 'REV_VEH'"
    ).fetchone()
    assert math.isclose(ledger[0], income[0], abs_tol=0.5) and ledger[1] == income[1]


# --- knowledge pack and profiles ------------------------------------------------------------


def test_knowledge_pack_loads_into_a_store(built: Summary, tmp_path: Path) -> None:
    path = built.out / "knowledge.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    with KnowledgeStore(f"sqlite:///{tmp_path}/k.db") as store:
        assert store.import_jsonl(path) == len(lines)
        assert store.count() == len(lines)
    kinds = Counter(json.loads(line)["type"] for line in lines)
    for kind in ("document", "knowledge", "synonym", "metric", "rule", "predicate", "taxonomy"):
        assert kinds[kind] > 0, kind
    assert not {"table", "column", "enum"} & set(kinds)
    documents = sorted(p.name for p in (built.out / "knowledge").glob("*.md"))
    assert len(documents) == kinds["document"] >= 6


def test_knowledge_rules_carry_context_triggers(built: Summary) -> None:
    entries = {e.name: e for e in read_ukf_jsonl(built.out / "knowledge.jsonl")}
    refresh = entries[R.REFRESH_EARLY]
    assert refresh.triggers == {"query_time_window": {"day_of_month_to": 9}}
    assert refresh.triggered(QueryContext(query_time=datetime(2025, 3, 5, tzinfo=UTC)))
    assert not refresh.triggered(QueryContext(query_time=datetime(2025, 3, 15, tzinfo=UTC)))
    euro = entries[R.currency_rule_name("EUR")]
    assert euro.triggered(QueryContext(user_profile={"region": "EUR"}))
    assert not euro.triggered(QueryContext(user_profile={"region": "NAM"}))
    comet = entries["Comet"]
    assert comet.type == "synonym" and comet.content_resources["value"] == "NV200"
    assert entries["BCR"].type in ("knowledge", "metric")


def test_profiles_have_role_currency_caliber_region_department(built: Summary) -> None:
    people = json.loads((built.out / "profiles.json").read_text(encoding="utf-8"))
    assert len(people) >= 10
    for person in people:
        assert {"role", "currency", "caliber", "region", "department"} <= set(person)
    assert {p["role"] for p in people} == {"executive", "analyst", "controller"}
    assert {p["caliber"] for p in people} == {"A", "B"}


# --- questions ------------------------------------------------------------------------------


def test_question_counts_traits_and_splits(built: Summary, questions: list[Example]) -> None:
    assert len(questions) >= 400
    traits = Counter(t for q in questions for t in q.tag_values("TRAIT"))
    assert all(traits[t] >= 100 for t in TRAITS), traits
    train = load_almanac_jsonl(built.out / "train.jsonl").examples
    test = load_almanac_jsonl(built.out / "test.jsonl").examples
    assert sorted(q.id for q in [*train, *test]) == sorted(q.id for q in questions)
    assert {q.split for q in train} == {"train"} and {q.split for q in test} == {"test"}
    assert {q.difficulty for q in questions} == {"easy", "medium", "hard"}
    for q in questions:
        assert q.context.query_time is not None and q.context.user_profile
        assert set(q.gold_sql_by_dialect) == {"sqlite", "postgresql"}


def test_every_gold_query_returns_rows(questions: list[Example], db: sqlite3.Connection) -> None:
    for q in questions:
        for sql in q.gold_for("sqlite"):
            rows = db.execute(sql).fetchall()
            assert rows and all(v is not None for row in rows for v in row), (q.id, sql)


def test_question_knowledge_is_in_the_pack(built: Summary, questions: list[Example]) -> None:
    names = {e.name for e in read_ukf_jsonl(built.out / "knowledge.jsonl")}
    for q in questions:
        missing = set(q.metadata["knowledge"]) - names
        assert not missing, (q.id, missing)


def test_gold_sql_encodes_the_business_rules(questions: list[Example]) -> None:
    by_template: dict[str, list[Example]] = {}
    for q in questions:
        by_template.setdefault(q.metadata["template"], []).append(q)
    for name in ("region_rank", "region_growth", "region_share"):
        assert all("region_code <> 'HQ'" in q.gold_sql[0] for q in by_template[name])
    assert all("caliber = 'A'" in q.gold_sql[0] for q in by_template["budget"])
    for q in questions:
        assert q.metadata["reporting_period"] == cal.reporting_period(q.context.query_time)
        if R.caliber_rule_name("B") in q.metadata["knowledge"]:
            assert "caliber = 'B'" in q.gold_sql[0]


def test_context_decides_period_currency_and_caliber() -> None:
    world = build_world(SEED)
    profile = {"region": "EUR", "currency": "EUR", "caliber": "B", "department": "ALL"}

    def ask(when: datetime) -> Ask:
        asking = Ask(random.Random(0), world, profile, when, terse=True)
        asking.chance = lambda _probability: False  # every slot left to the context
        return asking

    early = ask(datetime(2025, 3, 5, 9, tzinfo=UTC))
    assert early.window(("this_month",)).period == "202502"
    assert early.window(("last_month",)).period == "202501"
    assert early.currency() == ("EUR", "") and early.caliber() == ("B", "")
    assert {CONTEXT, PRIVATE} <= early.traits and R.REFRESH_EARLY in early.knowledge
    late = ask(datetime(2025, 3, 15, 9, tzinfo=UTC))
    assert late.window(("this_month",)).period == "202503"
    assert PRIVATE not in late.traits
    assert late.window(("ytd",)).first == "202404"
    assert late.window(("last_year",)).period == "202403"


# --- determinism and PostgreSQL -------------------------------------------------------------


def test_same_seed_same_bytes_other_seed_other_data(
    built: Summary, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--out", str(tmp_path / "b"), "--seed", str(SEED), "--quiet"]) == 0
    assert "total" in capsys.readouterr().out
    first, again = digest(built.out), digest(tmp_path / "b")
    assert len(first) >= 14 and first == again
    shutil.rmtree(tmp_path / "b")
    other = generate(tmp_path / "c", seed=SEED + 1, progress=False)
    changed = digest(other.out)
    shutil.rmtree(tmp_path / "c")
    assert changed["autofin.sqlite"] != first["autofin.sqlite"]
    assert changed["questions.jsonl"] != first["questions.jsonl"]
    assert changed["knowledge.jsonl"] == first["knowledge.jsonl"]  # the pack does not vary


def _comparable(rows: list[tuple]) -> list[tuple]:
    def value(v: object) -> object:
        return float(v) if isinstance(v, Decimal | int | float) else v

    return [tuple(value(v) for v in row) for row in rows]


def _same(left: list[tuple], right: list[tuple], *, ordered: bool) -> bool:
    left, right = _comparable(left), _comparable(right)
    if not ordered:

        def key(row: tuple) -> tuple:
            return tuple((0, round(v, 2), "") if isinstance(v, float) else (1, 0, v) for v in row)

        left, right = sorted(left, key=key), sorted(right, key=key)
    return len(left) == len(right) and all(
        all(
            math.isclose(x, y, rel_tol=1e-6, abs_tol=1e-6) if isinstance(x, float) else x == y
            for x, y in zip(a, b, strict=True)
        )
        for a, b in zip(left, right, strict=True)
    )


@pytest.mark.postgres
def test_postgresql_gold_returns_the_sqlite_rows(
    fresh_pg_database: str, questions: list[Example], db: sqlite3.Connection
) -> None:
    _, tables = build_tables(SEED, progress=False)
    load_postgres(tables, fresh_pg_database, progress=False)
    with psycopg.connect(psycopg_conninfo(fresh_pg_database)) as connection:
        income = connection.execute("SELECT COUNT(*) FROM income_nova").fetchone()[0]
        assert income == 40_320
        for q in questions:
            expected = db.execute(q.gold_for("sqlite")[0]).fetchall()
            for sql in q.gold_for("postgresql"):
                got = connection.execute(sql).fetchall()
                assert _same(expected, got, ordered=q.order_relevant), (q.id, sql)


def test_the_gold_system_scores_one_on_autofin(built: Summary, tmp_path: Path) -> None:
    from bench.report import mean_scores
    from bench.run import RunConfig, Runner
    from bench.systems import GoldSystem

    url = f"sqlite:///{built.out / 'autofin.sqlite'}"
    dataset = load_almanac_jsonl(built.out / "questions.jsonl", databases={"autofin": url})
    results = Runner(dataset, GoldSystem(), RunConfig(out_dir=tmp_path, workers=2)).run()
    assert len(results) >= 400 and all(r.scored for r in results)
    assert mean_scores(results) == {"ex": 1.0, "spider_ex": 1.0, "soft_f1": 1.0, "bf_beta": 1.0}
