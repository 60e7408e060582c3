"""Profiling into the store: Table, Column and Enum UKF, the describer, and re-profiling
after data and schema changes."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from kb.profile.profiler import ColumnProfile, Description, TableProfile
from tests.kb.shop import (
    REGIONS,
    column_entry,
    enum_values,
    run,
)
from ukf import EnumUKF, PredicateUKF, TableUKF

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
