"""Target-database access: reflection, read-only execution, limits and rendering.

SQLite tests use a real Spider database; PostgreSQL tests build a small sales schema in a fresh
database and go through the same ``Database`` API.
"""

import datetime as dt
import logging
import shutil
import threading
import uuid
from collections.abc import Iterator
from decimal import Decimal

import pytest
from sqlalchemy import create_engine, text

from bench.datasets.registry import default_data_root
from kb.target.database import LOGGED_SQL_CHARS, Database
from kb.target.readonly import QueryFailedError, TargetConnectionError, run_limited
from kb.target.reflection import UnknownTableError
from kb.target.results import Results, to_jsonable
from kb.target.results_render import render_results
from tests.support.postgres import free_port

SPIDER = default_data_root() / "spider_dev/database/concert_singer/concert_singer.sqlite"
RUNAWAY = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT count(*) FROM c"


@pytest.fixture()
def concert(tmp_path) -> Iterator[Database]:
    if not SPIDER.is_file():
        pytest.fail(f"Spider database not found at {SPIDER}; set ALMANAC_BENCH_DATA")
    copy = tmp_path / "concert_singer.sqlite"
    shutil.copyfile(SPIDER, copy)
    with Database(f"sqlite:///{copy}", timeout_s=5) as db:
        yield db


# ------------------------------------------------------------------ SQLite: reflection


def test_reflection_lists_the_spider_tables(concert):
    assert concert.dialect == "sqlite"
    assert concert.tables() == ["concert", "singer", "singer_in_concert", "stadium"]
    assert list(concert.reflect()) == concert.tables()


def test_reflection_reads_columns_primary_and_foreign_keys(concert):
    singer = concert.table_info("singer")
    assert singer.primary_key == ["Singer_ID"]
    assert singer.column("Singer_ID").primary_key
    assert singer.column("name").name == "Name"  # case-insensitive lookup
    assert singer.column("Age").type == "INTEGER"  # declared "int"; SQLAlchemy's type name
    assert not singer.column("Age").primary_key

    link = concert.table_info("singer_in_concert")
    assert link.primary_key == ["concert_ID", "Singer_ID"]
    refs = {(tuple(fk.columns), fk.ref_table, tuple(fk.ref_columns)) for fk in link.foreign_keys}
    assert refs == {
        (("concert_ID",), "concert", ("concert_ID",)),
        (("Singer_ID",), "singer", ("Singer_ID",)),
    }
    stadium_fk = concert.table_info("concert").foreign_keys[0]
    assert (stadium_fk.columns, stadium_fk.ref_table) == (["Stadium_ID"], "stadium")


def test_an_unknown_table_is_named_with_suggestions(concert):
    with pytest.raises(UnknownTableError, match=r"'singers'.*singer"):
        concert.table_info("singers")


def test_reflection_is_cached_until_refresh(concert):
    first = concert.table_info("singer")
    assert concert.table_info("singer") is first
    assert concert.reflect()["singer"] is first
    concert.refresh()
    assert concert.table_info("singer") is not first
    assert concert.table_info("singer") == first


# ------------------------------------------------------------------ SQLite: execution


def test_execute_returns_columns_rows_and_timing(concert):
    res = concert.execute("SELECT Name, Age FROM singer ORDER BY Age DESC")
    assert res.ok and res.error is None and res.error_kind is None
    assert res.columns == ["Name", "Age"]
    assert res.rows[0] == ("Joe Sharp", 52)
    assert res.row_count == 6 and not res.truncated
    assert 0 < res.elapsed < 5
    assert res.sql == "SELECT Name, Age FROM singer ORDER BY Age DESC"


def test_rows_beyond_the_cap_are_cut_and_flagged(concert):
    res = concert.execute("SELECT * FROM singer", max_rows=4)
    assert res.ok and res.truncated and res.row_count == 4
    exact = concert.execute("SELECT * FROM singer", max_rows=6)
    assert not exact.truncated and exact.row_count == 6


def test_an_empty_result_is_still_ok(concert):
    res = concert.execute("SELECT Name FROM singer WHERE Age > 1000")
    assert res.ok and res.rows == [] and res.columns == ["Name"] and res.row_count == 0


def test_bad_sql_comes_back_as_an_error_with_the_snippet(concert):
    res = concert.execute("SELECT no_such_column FROM singer")
    assert not res.ok and res.error_kind == "sql"
    assert "no_such_column" in res.error and "FROM singer" in res.error
    refused = concert.execute("DELETE FROM singer")
    assert refused.error_kind == "refused" and "DELETE FROM singer" in refused.error


def test_a_refused_query_is_logged_with_its_sql(concert, caplog):
    broken = "SELECT (name FROM singer WHERE " + " AND ".join(f"c{i} = {i}" for i in range(80))
    with caplog.at_level(logging.INFO, logger="kb.target.database"):
        assert concert.execute(broken).error_kind == "refused"
    (line,) = [r.getMessage() for r in caplog.records if "refused query" in r.message]
    assert "could not be parsed" in line and "SQL: SELECT (name FROM singer WHERE c0 = 0" in line
    assert line.endswith("…") and len(line.split("SQL: ", 1)[1]) == LOGGED_SQL_CHARS


def test_a_runaway_query_is_cut_off_and_reported_as_a_timeout(concert):
    res = concert.execute(RUNAWAY, timeout_s=0.5)
    assert res.error_kind == "timeout"
    assert "time limit" in res.error and "RECURSIVE" in res.error
    assert 0.4 < res.elapsed < 3
    assert concert.execute("SELECT count(*) FROM singer").rows == [(6,)]  # connection reusable


def test_a_missing_sqlite_file_is_a_connection_error(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'missing.sqlite'}")
    res = db.execute("SELECT 1")
    assert res.error_kind == "connection" and "missing.sqlite" in res.error
    with pytest.raises(TargetConnectionError, match=r"missing\.sqlite"):
        db.tables()
    assert not (tmp_path / "missing.sqlite").exists()


def test_unsupported_urls_and_limits_are_rejected_early(tmp_path):
    with pytest.raises(ValueError, match="in-memory"):
        Database("sqlite://")
    with pytest.raises(ValueError, match="unsupported"):
        Database("mysql://u@localhost/db")
    with pytest.raises(ValueError, match="max_rows"):
        Database(f"sqlite:///{tmp_path / 'x.db'}", max_rows=0)


def test_one_database_serves_many_threads(concert):
    results: list[Results] = []

    def ask(age: int) -> None:
        for _ in range(10):
            results.append(concert.execute(f"SELECT count(*) FROM singer WHERE Age > {age}"))

    threads = [threading.Thread(target=ask, args=(age,)) for age in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 80 and all(r.ok for r in results)


# ------------------------------------------------------------------ values and rendering


def test_values_become_json_friendly():
    when = dt.datetime(2024, 5, 1, 12, 30)
    assert to_jsonable(Decimal("12.50")) == 12.5
    assert to_jsonable(when) == "2024-05-01T12:30:00"
    assert to_jsonable(when.date()) == "2024-05-01"
    assert to_jsonable(dt.timedelta(minutes=2)) == 120.0
    assert to_jsonable(b"\x00\xff") == "00ff"
    assert to_jsonable(memoryview(b"\xde\xad")) == "dead"
    assert to_jsonable(uuid.UUID(int=1)) == "00000000-0000-0000-0000-000000000001"
    assert to_jsonable([Decimal("1.5"), {"a": b"\x01"}]) == [1.5, {"a": "01"}]


def test_a_small_result_renders_as_a_whole_table(concert):
    text_ = render_results(concert.execute("SELECT Name, Age FROM singer WHERE Age > 40"))
    assert text_.splitlines()[0] == "| Name | Age |"
    assert "| Joe Sharp | 52 |" in text_
    assert text_.endswith("3 rows") and "statistics" not in text_


def test_rendering_keeps_statistics_of_the_rows_it_drops(concert):
    res = concert.execute("SELECT Name, Country, Age FROM singer ORDER BY Age")
    text_ = render_results(res, max_rows=2)
    assert "showing 2 of 6 rows" in text_
    assert "statistics over all 6 fetched rows" in text_
    assert "- Age: 6 distinct, min 25, max 52" in text_
    assert "- Country: 3 distinct, min 'France', max 'United States'" in text_


def test_rendering_says_when_the_row_cap_was_hit_and_respects_max_chars(concert):
    res = concert.execute("SELECT * FROM singer", max_rows=5)
    text_ = render_results(res, max_chars=600)
    assert len(text_) <= 600
    assert "at least 6 rows" in text_ and "statistics over all 5 fetched rows" in text_
    wide = Results(columns=["a", "b"], rows=[(i, "x" * 300) for i in range(100)])
    squeezed = render_results(wide, max_chars=500)
    assert len(squeezed) <= 500 and "of 100 rows" in squeezed and "- a: 100 distinct" in squeezed


def test_rendering_errors_and_nulls(concert):
    failed = concert.execute("SELECT nope FROM singer")
    assert render_results(failed).startswith("ERROR (sql): no such column: nope")
    res = Results(columns=["v"], rows=[(None,), (1.5,), ("a|b",)])
    rendered = render_results(res, max_rows=1)
    assert "| NULL |" in rendered and "1 null" in rendered


# ------------------------------------------------------------------ PostgreSQL


@pytest.fixture()
def sales_pg(fresh_pg_database):
    engine = create_engine(fresh_pg_database)
    with engine.begin() as conn:
        conn.execute(
            text(
                "CREATE TABLE region (id int PRIMARY KEY, name text NOT NULL DEFAULT 'n/a');"
                "COMMENT ON TABLE region IS 'sales regions';"
                "COMMENT ON COLUMN region.name IS 'display name';"
                "CREATE TABLE sale (id serial PRIMARY KEY,"
                " region_id int NOT NULL REFERENCES region(id), amount numeric(10, 2),"
                " sold_on date, payload bytea, labels jsonb);"
                "CREATE VIEW north_sales AS SELECT * FROM sale WHERE region_id = 1;"
                "INSERT INTO region VALUES (1, 'north'), (2, 'south');"
                "INSERT INTO sale (region_id, amount, sold_on, payload, labels)"
                " SELECT 1 + g % 2, g * 1.25, DATE '2024-01-01' + g, '\\xbeef', '{\"k\": 1}'"
                " FROM generate_series(1, 50) AS g;"
            )
        )
    engine.dispose()
    with Database(fresh_pg_database, timeout_s=5) as db:
        yield db


@pytest.mark.postgres
def test_postgres_reflection_reads_keys_defaults_comments_and_views(sales_pg):
    assert sales_pg.dialect == "postgresql"
    assert sales_pg.tables() == ["north_sales", "region", "sale"]
    region = sales_pg.table_info("region")
    assert region.comment == "sales regions" and region.primary_key == ["id"]
    name = region.column("name")
    assert (name.type, name.nullable, name.comment) == ("TEXT", False, "display name")
    assert "n/a" in name.default
    sale = sales_pg.table_info("sale")
    assert sale.column("amount").type == "NUMERIC(10, 2)"
    [fk] = sale.foreign_keys
    assert (fk.columns, fk.ref_table, fk.ref_columns) == (["region_id"], "region", ["id"])
    assert sales_pg.reflect()["north_sales"].kind == "view"


@pytest.mark.postgres
def test_postgres_execution_converts_values_and_truncates(sales_pg):
    res = sales_pg.execute(
        "SELECT id, amount, sold_on, payload, labels, 100 % 7 AS m, 'a%b' AS s"
        " FROM sale ORDER BY id",
        max_rows=10,
    )
    assert res.ok, res.error
    assert res.truncated and res.row_count == 10
    assert res.rows[0] == (1, 1.25, "2024-01-02", "beef", {"k": 1}, 2, "a%b")
    joined = sales_pg.execute(
        "WITH t AS (SELECT region_id, sum(amount) AS total FROM sale GROUP BY region_id)"
        " SELECT r.name, t.total FROM t JOIN region r ON r.id = t.region_id ORDER BY r.name"
    )
    assert joined.rows == [("north", 812.5), ("south", 781.25)]


@pytest.mark.postgres
def test_postgres_errors_refusals_and_timeouts_come_back_as_results(sales_pg):
    assert sales_pg.execute("SELECT nope FROM sale").error_kind == "sql"
    assert sales_pg.execute("DELETE FROM sale").error_kind == "refused"
    slow = sales_pg.execute("SELECT pg_sleep(5)", timeout_s=0.5)
    assert slow.error_kind == "timeout" and slow.elapsed < 3
    runaway = sales_pg.execute(
        "SELECT count(*) FROM sale a, sale b, sale c, sale d, sale e", timeout_s=0.5
    )
    assert runaway.error_kind == "timeout"
    assert sales_pg.execute("SELECT count(*) FROM sale").rows == [(50,)]


@pytest.mark.postgres
def test_postgres_connections_refuse_writes_even_outside_execute(sales_pg):
    with sales_pg.engine.connect() as conn:
        with pytest.raises(Exception, match="read-only transaction"):
            conn.exec_driver_sql("DELETE FROM sale")
        conn.rollback()
    smuggled = "SELECT 1; SET default_transaction_read_only = off; DELETE FROM sale"
    with pytest.raises(QueryFailedError, match="multiple commands"):
        run_limited(sales_pg.engine, smuggled, max_rows=1, timeout_s=1)
    with pytest.raises(QueryFailedError, match="read-only transaction"):
        run_limited(sales_pg.engine, "SELECT nextval('sale_id_seq')", max_rows=1, timeout_s=1)
    assert sales_pg.execute("SELECT count(*) FROM sale").rows == [(50,)]


@pytest.mark.postgres
def test_postgres_threads_share_one_database(sales_pg):
    results: list[Results] = []

    def ask() -> None:
        results.extend(sales_pg.execute("SELECT count(*) FROM sale") for _ in range(5))

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [r.rows for r in results] == [[(50,)]] * 30


@pytest.mark.postgres
def test_an_unreachable_postgres_is_a_clear_connection_error():
    url = f"postgresql+psycopg://nobody@127.0.0.1:{free_port()}/nothing"
    db = Database(url, timeout_s=2)
    res = db.execute("SELECT 1")
    assert res.error_kind == "connection"
    assert "cannot connect" in res.error and "127.0.0.1" in res.error
    with pytest.raises(TargetConnectionError, match="cannot connect"):
        db.tables()
