"""Column profiling on databases the tests build: type rules, temporal formats, sampling,
the describer, and incremental re-profiling with schema-change invalidation."""

from __future__ import annotations

import datetime as dt
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kb.database import Database
from kb.profile import (
    ColumnProfile,
    Description,
    ProfileOptions,
    TableProfile,
    profile_database,
    profile_schema,
)
from kb.profile_temporal import detect_format
from kb.store import KnowledgeStore
from ukf import ColumnUKF, EnumUKF, PredicateUKF, TableUKF

QUIET = ProfileOptions(progress=False)
REGIONS = ("North", "South", "East", "West", "North-East")
WORDS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa", "sigma")
START = dt.date(2020, 1, 1)


def _bio(rng: random.Random) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(10, 16))).capitalize() + "."


def build_shop(path: Path, customers: int = 200, orders: int = 1000) -> None:
    """Customers and orders with one column of every semantic type."""
    rng = random.Random(7)
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, region TEXT, bio TEXT,"
            " signup TEXT, balance REAL, vip INTEGER, notes TEXT, qty INTEGER)"
        )
        conn.execute(
            "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer_id INTEGER"
            " REFERENCES customers(customer_id), ordered_at TEXT, amount REAL, status TEXT)"
        )
        conn.executemany(
            "INSERT INTO customers VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    i,
                    REGIONS[i % len(REGIONS)],
                    _bio(rng),
                    (START + dt.timedelta(days=7 * i)).strftime("%d/%m/%Y"),
                    round(rng.uniform(0, 5000), 2),
                    int(i % 10 == 0),
                    rng.choice(("call back", "no contact", None)),
                    rng.randint(1, 40),
                )
                for i in range(1, customers + 1)
            ],
        )
        conn.executemany(
            "INSERT INTO orders VALUES (?, ?, ?, ?, ?)",
            [
                (
                    i,
                    rng.randint(1, customers),
                    f"2023-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} 10:00:00",
                    round(rng.uniform(5, 500), 2),
                    rng.choice(("open", "shipped", "returned")),
                )
                for i in range(1, orders + 1)
            ],
        )
    conn.close()


@pytest.fixture()
def shop(tmp_path: Path) -> Path:
    path = tmp_path / "shop.sqlite"
    build_shop(path)
    return path


@pytest.fixture()
def sqlite_store(tmp_path: Path) -> Iterator[KnowledgeStore]:
    with KnowledgeStore(f"sqlite:///{tmp_path / 'knowledge.db'}") as opened:
        yield opened


def run(path: Path, store: KnowledgeStore, **kwargs: Any):
    kwargs.setdefault("options", QUIET)
    with Database(f"sqlite:///{path}") as database:
        return profile_database(database, store, database_name="shop", **kwargs)


def schema(path: Path, options: ProfileOptions = QUIET):
    with Database(f"sqlite:///{path}") as database:
        return profile_schema(database, database_name="shop", options=options)


def sql(path: Path, query: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute(query).fetchall()
    conn.close()
    return rows


def column_entry(store: KnowledgeStore, table: str, column: str) -> ColumnUKF:
    found = store.search(type="column", tags={"TABLE": table, "COLUMN": column})
    assert len(found) == 1, found
    return found[0]  # type: ignore[return-value]


def enum_values(store: KnowledgeStore, table: str, column: str) -> set[Any]:
    entries = store.iterate(type="enum", tags={"TABLE": table, "COLUMN": column})
    return {e.content_resources["value"] for e in entries}


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


# ------------------------------------------------------------------ UKF and describer


def test_profiling_writes_table_column_and_enum_ukf(shop, sqlite_store):
    report = run(shop, sqlite_store)
    assert report.added and not (report.updated or report.unchanged or report.invalidated)
    table = sqlite_store.search(type="table", tags={"TABLE": "orders"})[0]
    assert isinstance(table, TableUKF) and table.creator == "profiler" and table.source == "system"
    customers_id = table.sibling_id("customers")
    joins = [r for r in table.related if r.relation == "joins"]
    assert [(r.object, r.resources["columns"]) for r in joins] == [(customers_id, ["customer_id"])]
    column = column_entry(sqlite_store, "customers", "region")
    assert column.content_resources["semantic_type"] == "categorical"
    assert column.content_resources["statistics"]["values"]["classes"] == 5
    assert column.related[0].object == customers_id
    assert enum_values(sqlite_store, "customers", "region") == set(REGIONS)
    north_east = sqlite_store.search(type="enum", tags={"ENUM": "North-East"})[0]
    assert isinstance(north_east, EnumUKF)
    assert north_east.synonyms == ["north-east", "North East", "north east"]
    assert north_east.related[0].object == column.id
    assert 'Value "North-East" of customers.region' in north_east.text()
    assert "[categorical]" in column.text()


class CountingDescriber:
    """Deterministic describer that records how often it is asked."""

    def __init__(self) -> None:
        self.calls = 0

    def describe_table(self, table: TableProfile) -> Description:
        self.calls += 1
        return Description(f"{table.name} with {table.row_count} rows", (f"all {table.name}",))

    def describe_column(self, table: TableProfile, column: ColumnProfile) -> Description:
        self.calls += 1
        return Description(f"the {column.semantic_type} {column.name} of {table.name}")

    def describe_enum(self, table: TableProfile, column: ColumnProfile, value: Any) -> Description:
        self.calls += 1
        if value == "West":
            raise RuntimeError("the model is down")
        return Description(f"{column.name} {value}", (f"{value} area",))


def test_a_describer_fills_descriptions_and_synonyms_once(shop, sqlite_store):
    describer = CountingDescriber()
    run(shop, sqlite_store, describer=describer)
    table = sqlite_store.search(type="table", tags={"TABLE": "customers"})[0]
    assert table.description == "customers with 200 rows"
    assert table.synonyms == ["all customers"]
    assert column_entry(sqlite_store, "orders", "amount").description == (
        "the numeric amount of orders"
    )
    south = sqlite_store.search(type="enum", tags={"ENUM": "South"})[0]
    assert (south.description, south.synonyms) == ("region South", ["south", "South area"])
    west = sqlite_store.search(type="enum", tags={"ENUM": "West"})[0]
    assert west.description == ""  # a failing describer does not stop profiling
    asked = describer.calls
    again = run(shop, sqlite_store, describer=describer)
    assert describer.calls == asked + 1  # only West, which still has no description
    assert not again.changed


# ------------------------------------------------------------------ incremental re-profiling


def test_re_profiling_an_unchanged_database_writes_nothing(shop, sqlite_store):
    first = run(shop, sqlite_store)
    version = sqlite_store.version
    second = run(shop, sqlite_store)
    assert sorted(second.unchanged) == sorted(first.added)
    assert not second.changed and second.store_version == version == sqlite_store.version


def test_changed_data_updates_content_but_keeps_ids(shop, sqlite_store):
    run(shop, sqlite_store)
    before = column_entry(sqlite_store, "orders", "amount")
    with sqlite3.connect(shop) as conn:
        conn.execute("UPDATE orders SET amount = amount + 1 WHERE order_id <= 10")
    conn.close()
    report = run(shop, sqlite_store)
    after = column_entry(sqlite_store, "orders", "amount")
    assert after.id == before.id and after.content_hash != before.content_hash
    assert after.id in report.updated and not report.invalidated
    assert column_entry(sqlite_store, "orders", "status").id in report.unchanged


def _change_schema(path: Path) -> None:
    """Drop ``notes``, make ``qty`` TEXT, remove the region West, add ``email``."""
    with sqlite3.connect(path) as conn:
        conn.execute("ALTER TABLE customers DROP COLUMN notes")
        conn.execute("ALTER TABLE customers ADD COLUMN email TEXT")
        conn.execute("UPDATE customers SET region = 'East' WHERE region = 'West'")
        conn.execute("ALTER TABLE customers RENAME COLUMN qty TO qty_old")
        conn.execute("ALTER TABLE customers ADD COLUMN qty TEXT")
        conn.execute("UPDATE customers SET qty = 'q' || qty_old")
        conn.execute("ALTER TABLE customers DROP COLUMN qty_old")
    conn.close()


def test_schema_changes_invalidate_knowledge_and_what_relates_to_it(shop, sqlite_store):
    run(shop, sqlite_store)
    notes = column_entry(sqlite_store, "customers", "notes")
    qty = column_entry(sqlite_store, "customers", "qty")
    notes_enums = sqlite_store.search_ids(type="enum", tags={"COLUMN": "notes"})
    west = sqlite_store.search(type="enum", tags={"ENUM": "West"})[0]
    rule = PredicateUKF.create(
        "western customers", "region = 'West'", database="shop", enums=[west], source="user"
    )
    big_orders = PredicateUKF.create(
        "big orders",
        "amount > 400",
        database="shop",
        columns=[column_entry(sqlite_store, "orders", "amount")],
    )
    sqlite_store.upsert_many([rule, big_orders])
    _change_schema(shop)

    report = run(shop, sqlite_store)

    invalid = set(report.invalidated)
    assert {notes.id, qty.id, west.id, rule.id, *notes_enums} <= invalid
    assert big_orders.id not in invalid
    for uid in (notes.id, qty.id, west.id, rule.id):
        assert sqlite_store.get(uid).inactive_mark
    new_qty = column_entry(sqlite_store, "customers", "qty")
    assert new_qty.id != qty.id and new_qty.version == "v2" and new_qty.parents == [qty.id]
    assert new_qty.content_resources["data_type"] == "TEXT"
    assert new_qty.id in report.added
    email = column_entry(sqlite_store, "customers", "email")
    assert email.id in report.added
    table = sqlite_store.search(type="table", tags={"TABLE": "customers"})[0]
    assert table.id in report.updated and "notes" not in table.columns
    assert column_entry(sqlite_store, "orders", "status").id in report.unchanged
    assert not run(shop, sqlite_store).changed


def test_a_dropped_table_takes_its_columns_and_enums_with_it(shop, sqlite_store):
    run(shop, sqlite_store)
    orders_ids = set(sqlite_store.search_ids(tags={"TABLE": "orders"}, limit=None))
    with sqlite3.connect(shop) as conn:
        conn.execute("DROP TABLE orders")
    conn.close()
    report = run(shop, sqlite_store)
    assert orders_ids and orders_ids <= set(report.invalidated)
    assert sqlite_store.count(tags={"TABLE": "orders"}) == 0
    assert sqlite_store.count(tags={"TABLE": "customers"}) > 0
