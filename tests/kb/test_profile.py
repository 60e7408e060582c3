"""Profiling statistics: semantic types, counts, formats, sampling and time limits."""

from __future__ import annotations

import datetime as dt
import sqlite3

import numpy as np
import pytest

from kb.profile.profiler import ProfileOptions
from kb.profile.temporal import detect_format
from tests.kb.shop import (
    REGIONS,
    START,
    run,
    schema,
    sql,
)

# ------------------------------------------------------------------ type annotation


def test_every_semantic_type_is_recognised(shop):
    profile = schema(shop)
    kinds = {(t.name, c.name): c.semantic_type for t in profile.tables for c in t.columns}
    assert kinds == {
        ("customers", "customer_id"): "identifier",  # primary key
        ("customers", "region"): "categorical",  # 5 classes
        ("customers", "bio"): "text",  # long free-form
        ("customers", "signup"): "temporal",  # '31/12/2023' strings
        ("customers", "balance"): "numeric",
        ("customers", "vip"): "categorical",  # 0/1 flag
        ("customers", "notes"): "categorical",
        ("customers", "qty"): "numeric",
        ("orders", "order_id"): "identifier",
        ("orders", "customer_id"): "identifier",  # foreign key
        ("orders", "ordered_at"): "temporal",
        ("orders", "amount"): "numeric",
        ("orders", "status"): "categorical",
    }


def test_table_and_database_profiles_carry_keys_and_counts(shop):
    profile = schema(shop)
    assert (profile.table_count, profile.column_count, profile.row_count) == (2, 13, 1200)
    orders = profile.table("orders")
    assert orders.primary_key == ["order_id"]
    fk = orders.foreign_keys[0]
    assert (fk.columns, fk.ref_table, fk.ref_columns) == (
        ["customer_id"],
        "customers",
        ["customer_id"],
    )
    assert orders.column("customer_id").references == [
        {"table": "customers", "column": "customer_id"}
    ]
    stats = profile.table("customers").statistics()
    assert stats["row_count"] == 200 and stats["column_count"] == 8 and not stats["sampled"]
    assert stats["semantic_types"]["categorical"] == 3


def test_views_are_profiled_like_tables(shop, sqlite_store):
    with sqlite3.connect(shop) as conn:
        conn.execute("CREATE VIEW returns AS SELECT * FROM orders WHERE status = 'returned'")
    conn.close()
    options = ProfileOptions(progress=False, sample_rows=50)
    returns = schema(shop, options).table("returns")
    assert returns.kind == "view" and returns.sampled and not returns.warnings
    assert returns.column("status").enum_values == [("returned", returns.row_count, 1.0)]
    run(shop, sqlite_store)
    view = sqlite_store.search(type="table", tags={"TABLE": "returns"})[0]
    assert view.content_resources["kind"] == "view"


def test_numeric_statistics_match_sql(shop):
    amount = schema(shop).table("orders").column("amount").statistics
    ((mean, low, high),) = sql(shop, "SELECT AVG(amount), MIN(amount), MAX(amount) FROM orders")
    values = [row[0] for row in sql(shop, "SELECT amount FROM orders")]
    numeric = amount["numeric"]
    assert numeric["kind"] == "float"
    assert numeric["mean"] == pytest.approx(mean)
    assert (numeric["min"], numeric["max"]) == (low, high)
    assert [numeric["p25"], numeric["p50"], numeric["p75"]] == pytest.approx(
        list(np.percentile(values, [25, 50, 75]))
    )
    assert numeric["exact"] and numeric["quartiles_exact"]
    qty = schema(shop).table("customers").column("qty").statistics["numeric"]
    assert qty["kind"] == "integer"


def test_categorical_statistics_count_every_class(shop):
    region = schema(shop).table("customers").column("region")
    values = region.statistics["values"]
    assert values["classes"] == 5 and values["exact"]
    assert values["max_length"] == len("North-East")
    assert sum(item["count"] for item in values["top"]) == 200
    assert values["top"][-1]["cumulative_frequency"] == pytest.approx(1.0)
    assert {item["value"] for item in values["top"]} == set(REGIONS)
    assert sorted(v for v, _count, _freq in region.enum_values or []) == sorted(REGIONS)
    notes = schema(shop).table("customers").column("notes").statistics
    assert (
        notes["null_count"] == sql(shop, "SELECT COUNT(*) FROM customers WHERE notes IS NULL")[0][0]
    )


# ------------------------------------------------------------------ temporal formats


def _dates(fmt: str, n: int = 60, step: int = 17) -> list[str]:
    return [(START + dt.timedelta(days=step * i)).strftime(fmt) for i in range(n)]


@pytest.mark.parametrize(
    "fmt",
    ["%d/%m/%Y", "%m/%d/%Y", "%Y%m", "%d.%m.%Y %H:%M", "%b %d, %Y", "%Y-%m-%d", "%d %B %Y"],
)
def test_a_date_format_is_detected_from_its_values(fmt):
    found = detect_format(_dates(fmt))
    assert found is not None and found.format == fmt


def test_day_and_month_are_told_apart_by_values_over_twelve():
    assert detect_format(["31/12/2023", "01/02/2023"]).format == "%d/%m/%Y"
    assert detect_format(["12/31/2023", "01/02/2023"]).format == "%m/%d/%Y"
    ambiguous = detect_format(["01/02/2023", "03/04/2023"])
    assert ambiguous.format == "%d/%m/%Y" and "%m/%d/%Y" in ambiguous.ambiguous_with


def test_values_that_do_not_all_parse_are_not_temporal():
    assert detect_format(["31/12/2023", "n/a 2"]) is None
    assert detect_format(["31/12/2023", "2023-12-31"]) is None
    assert detect_format(["A-1001", "B-2002"]) is None
    assert detect_format(["123456", "654321"]) is None  # digits, but implausible years


def test_a_non_iso_temporal_column_gets_its_format_and_real_range(tmp_path):
    path = tmp_path / "dates.sqlite"
    eu = _dates("%d/%m/%Y")
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE events (event_no INTEGER PRIMARY KEY, day TEXT)")
        conn.executemany("INSERT INTO events (day) VALUES (?)", [(d,) for d in eu])
    conn.close()
    day = schema(path).table("events").column("day")
    temporal = day.statistics["temporal"]
    last = START + dt.timedelta(days=17 * 59)
    assert day.semantic_type == "temporal"
    assert temporal["format"] == "%d/%m/%Y" and temporal["format_source"] == "detected"
    assert (temporal["min"], temporal["min_iso"]) == ("01/01/2020", "2020-01-01")
    assert (temporal["max"], temporal["max_iso"]) == (last.strftime("%d/%m/%Y"), last.isoformat())
    assert temporal["exact"]


# ------------------------------------------------------------------ sampling


def test_big_tables_are_sampled_but_counts_stay_exact(shop):
    options = ProfileOptions(progress=False, sample_rows=300)
    orders = schema(shop, options).table("orders")
    assert orders.sampled and 200 < orders.sample_size <= 300
    status = orders.column("status").statistics
    assert status["sampled"] and status["counts_exact"]
    assert status["values"]["exact"]  # top values from GROUP BY over the whole table
    assert sum(item["count"] for item in status["values"]["top"]) == 1000
    amount = orders.column("amount").statistics
    ((distinct,),) = sql(shop, "SELECT COUNT(DISTINCT amount) FROM orders")
    assert amount["distinct_count"] == distinct
    assert amount["numeric"]["exact"] and not amount["numeric"]["quartiles_exact"]
    assert schema(shop, options).table("orders").column("amount").statistics == amount


def test_above_the_exact_limit_only_indexed_columns_get_sql_counts(shop):
    options = ProfileOptions(progress=False, sample_rows=300, exact_max_rows=500)
    orders = schema(shop, options).table("orders")
    assert not orders.column("status").statistics["counts_exact"]
    assert not orders.column("status").statistics["values"]["exact"]
    order_id = orders.column("order_id").statistics
    assert order_id["distinct_count"] == 1000  # the primary key is indexed
    assert order_id["identifier"]["max"] == 1000


def test_a_query_cut_off_by_its_time_limit_only_drops_its_figures(shop):
    options = ProfileOptions(progress=False, sample_rows=300, query_timeout_s=1e-6)
    profile = schema(shop, options)
    orders = profile.table("orders")
    assert any("time limit" in warning for warning in orders.warnings)
    assert [c.name for c in orders.columns] == [
        "order_id",
        "customer_id",
        "ordered_at",
        "amount",
        "status",
    ]
    assert not orders.column("amount").statistics["counts_exact"]
