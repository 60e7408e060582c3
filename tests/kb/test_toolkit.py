"""The agent toolkit over a small shop: schema facts, fuzzy look-ups, SQL, tool schemas."""

from __future__ import annotations

import inspect
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.tools.toolkit import TOOL_ARGS, Toolkit
from indices.embeddings import HashingEmbedder, shared_minilm
from indices.fuzzy_schema import SchemaIndices
from kb.store import KnowledgeStore
from kb.target.database import Database
from ukf import BaseUKF, ColumnUKF, EnumUKF, ForeignKey, KnowledgeUKF, TableUKF

DB = "shop"
COUNTRIES = {"United States": 3, "United Kingdom": 2, "Germany": 1}
MODELS = {"NV-200": ["Nova 200"], "NV-300": [], "NX-20": []}


def shop_knowledge() -> list[BaseUKF]:
    customers = TableUKF.create(
        DB, "customers", columns=["id", "name", "country"], primary_key=["id"], row_count=6,
        comment="Customers who bought at least once", synonyms=["clients"],
    )  # fmt: skip
    products = TableUKF.create(
        DB, "products", columns=["id", "model", "category"], primary_key=["id"], row_count=3,
        comment="Vehicle models on sale",
    )  # fmt: skip
    orders = TableUKF.create(
        DB, "orders", columns=["id", "customer_id", "product_id", "order_date", "amt_usd"],
        primary_key=["id"], row_count=8, comment="One row per order",
        foreign_keys=[
            ForeignKey(columns=("customer_id",), ref_table="customers", ref_columns=("id",)),
            ForeignKey(columns=("product_id",), ref_table="products", ref_columns=("id",)),
        ],
    )  # fmt: skip
    country = ColumnUKF.create(
        customers, "country", data_type="TEXT", semantic_type="categorical",
        examples=["United States", "Germany"], comment="Billing country",
        statistics={"distinct": 3, "nulls": 0}, synonyms=["nation"],
    )  # fmt: skip
    model = ColumnUKF.create(
        products, "model", data_type="TEXT", semantic_type="categorical", comment="Model code"
    )
    category = ColumnUKF.create(products, "category", data_type="TEXT", comment="Vehicle type")
    entries = [customers, products, orders, country, model, category]
    entries += [
        ColumnUKF.create(customers, "id", data_type="INTEGER", primary_key=True, nullable=False),
        ColumnUKF.create(customers, "name", data_type="TEXT", comment="Customer full name"),
        ColumnUKF.create(products, "id", data_type="INTEGER", primary_key=True),
        ColumnUKF.create(orders, "id", data_type="INTEGER", primary_key=True),
        ColumnUKF.create(orders, "customer_id", data_type="INTEGER"),
        ColumnUKF.create(orders, "product_id", data_type="INTEGER"),
        ColumnUKF.create(orders, "order_date", data_type="DATE", comment="Day of the order"),
        ColumnUKF.create(
            orders, "amt_usd", data_type="REAL", comment="Order amount in US dollars",
            synonyms=["revenue", "sales amount"], statistics={"min": 10.0, "max": 990.0},
        ),
    ]  # fmt: skip
    entries += [EnumUKF.create(country, c, count=n, frequency=n / 6) for c, n in COUNTRIES.items()]
    entries += [EnumUKF.create(model, m, count=1, synonyms=s) for m, s in MODELS.items()]
    entries += [EnumUKF.create(category, c, count=1) for c in ("car", "truck", "bicycle")]
    return entries


def shop_database(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        conn.executescript(
            """
            CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, country TEXT);
            CREATE TABLE products (id INTEGER PRIMARY KEY, model TEXT, category TEXT);
            CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers,
                                 product_id INTEGER REFERENCES products, order_date DATE,
                                 amt_usd REAL);
            INSERT INTO customers VALUES (1, 'Ann', 'United States'), (2, 'Bo', 'Germany'),
                (3, 'Cy', 'United States'), (4, 'Di', 'United Kingdom'),
                (5, 'Ed', 'United Kingdom'), (6, 'Flo', 'United States');
            INSERT INTO products VALUES (1, 'NV-200', 'car'), (2, 'NV-300', 'truck'),
                (3, 'NX-20', 'bicycle');
            INSERT INTO orders VALUES (1, 1, 1, '2025-01-03', 10.0),
                (2, 2, 1, '2025-01-04', 20), (3, 3, 2, '2025-02-01', 990),
                (4, 4, 3, '2025-02-02', 15), (5, 5, 1, '2025-02-09', 40),
                (6, 6, 2, '2025-03-01', 500), (7, 1, 3, '2025-03-02', 12),
                (8, 2, 1, '2025-03-05', 30);
            """
        )
    return f"sqlite:///{path}"


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[KnowledgeStore]:
    with KnowledgeStore(f"sqlite:///{tmp_path}/k.db") as opened:
        opened.upsert_many(shop_knowledge())
        yield opened


@pytest.fixture()
def kit(store: KnowledgeStore, tmp_path: Path) -> Iterator[Toolkit]:
    with Database(shop_database(tmp_path / "shop.db")) as database:
        yield Toolkit(store, database, database_name=DB, embedder=shared_minilm())


def roundtrip(payload: dict) -> dict:
    """Every tool output must survive JSON."""
    return json.loads(json.dumps(payload))


# -------------------------------------------------------------------- schema facts
def test_db_info_lists_tables_with_descriptions_and_sizes(kit: Toolkit) -> None:
    info = roundtrip(kit.db_info())
    assert info["database"] == DB and info["dialect"] == "sqlite"
    assert [t["table"] for t in info["tables"]] == ["customers", "orders", "products"]
    orders = info["tables"][1]
    assert orders == {
        "table": "orders", "description": "One row per order", "row_count": 8, "column_count": 5
    }  # fmt: skip


def test_table_info_gives_columns_keys_and_joins(kit: Toolkit) -> None:
    info = roundtrip(kit.table_info("orders"))
    assert [c["column"] for c in info["columns"]] == [
        "id", "customer_id", "product_id", "order_date", "amt_usd"
    ]  # fmt: skip
    assert info["primary_key"] == ["id"] and info["row_count"] == 8
    assert info["foreign_keys"][0] == {
        "columns": ["customer_id"], "ref_table": "customers", "ref_columns": ["id"]
    }  # fmt: skip
    assert info["columns"][3]["description"] == "Day of the order"
    customers = roundtrip(kit.table_info("Customers"))  # case-insensitive
    assert customers["table"] == "customers" and customers["synonyms"] == ["clients"]
    assert customers["referenced_by"] == [
        {"table": "orders", "columns": ["customer_id"], "ref_table": "customers",
         "ref_columns": ["id"]}
    ]  # fmt: skip


def test_column_info_gives_profiled_facts_and_top_values(kit: Toolkit) -> None:
    info = roundtrip(kit.column_info("customers", "country"))
    assert info["data_type"] == "TEXT" and info["semantic_type"] == "categorical"
    assert info["description"] == "Billing country" and info["synonyms"] == ["nation"]
    assert info["statistics"] == {"distinct": 3, "nulls": 0}
    assert info["examples"] == ["United States", "Germany"]
    assert info["enum_value_count"] == 3
    assert [v["value"] for v in info["enum_values"]] == list(COUNTRIES)  # by count
    assert info["enum_values"][0]["count"] == 3
    model = roundtrip(kit.column_info("products", "MODEL"))
    assert {"value": "NV-200", "count": 1, "frequency": None, "synonyms": ["Nova 200"]} in model[
        "enum_values"
    ]


def test_unknown_names_get_error_payloads_with_suggestions(kit: Toolkit) -> None:
    table = roundtrip(kit.table_info("ordrs"))
    assert table["error_kind"] == "unknown_table" and "'ordrs'" in table["error"]
    assert table["suggestions"][0] == "orders"
    column = roundtrip(kit.column_info("orders", "order_dt"))
    assert column["error_kind"] == "unknown_column" and "orders" in column["error"]
    assert column["suggestions"][0] == "orders.order_date"
    assert kit.column_info("custmers", "country")["suggestions"][0] == "customers"
    assert kit.fuzzy_enum("x", table="nope")["error_kind"] == "unknown_table"
    assert kit.fuzzy_enum("x", column="contry")["suggestions"][0] == "customers.country"


# --------------------------------------------------------------------------- SQL
def test_execute_sql_returns_rows_and_rendered_text(kit: Toolkit) -> None:
    out = roundtrip(kit.execute_sql("SELECT country, COUNT(*) AS n FROM customers GROUP BY 1"))
    assert out["columns"] == ["country", "n"] and out["error"] is None
    assert ["United States", 3] in out["rows"] and not out["truncated"]
    assert "| country | n |" in out["text"]
    cut = roundtrip(kit.execute_sql("SELECT * FROM orders", max_rows=3))
    assert cut["row_count"] == 3 and cut["truncated"]


def test_execute_sql_errors_are_payloads(kit: Toolkit, store: KnowledgeStore) -> None:
    bad = roundtrip(kit.execute_sql("SELECT nope FROM orders"))
    assert bad["error_kind"] == "sql" and bad["text"].startswith("ERROR")
    refused = roundtrip(kit.execute_sql("DELETE FROM orders"))
    assert refused["error_kind"] == "refused" and refused["rows"] == []
    assert Toolkit(store).execute_sql("SELECT 1")["error_kind"] == "no_database"


# ------------------------------------------------------------------------- fuzzy
def test_fuzzy_column_matches_names_synonyms_and_descriptions(kit: Toolkit) -> None:
    out = roundtrip(kit.fuzzy_column("order date"))
    assert (out["matches"][0]["table"], out["matches"][0]["column"]) == ("orders", "order_date")
    revenue = kit.fuzzy_column("revenue", table="orders", k=3)["matches"]
    assert revenue[0]["column"] == "amt_usd" and revenue[0]["matched_text"] == "revenue"
    in_table = kit.fuzzy_column("name", table="customers")["matches"]
    assert in_table and all(m["table"] == "customers" for m in in_table)


def test_fuzzy_enum_finds_typos_codes_synonyms_and_meanings(kit: Toolkit) -> None:
    best = roundtrip(kit.fuzzy_enum("untied states"))["matches"][0]
    assert [best["table"], best["column"], best["value"]] == [
        "customers",
        "country",
        "United States",
    ]
    assert best["count"] == 3 and 0 < best["containment"] < 1 and best["cosine"] is not None
    for query in ("NV200", "nova 200"):
        assert kit.fuzzy_enum(query, column="products.model")["matches"][0]["value"] == "NV-200"
    car = kit.fuzzy_enum("automobile", table="products", column="category")["matches"][0]
    assert car["value"] == "car" and car["containment"] == 0
    bare = kit.fuzzy_enum("germny", column="country", k=1)["matches"]
    assert [m["value"] for m in bare] == ["Germany"]
    assert kit.fuzzy_enum("germny", column="Country", k=1)["matches"][0]["value"] == "Germany"


def test_only_the_named_database_is_visible(store: KnowledgeStore) -> None:
    other = TableUKF.create("hr", "employees", columns=["country"], comment="Staff")
    store.upsert_many([other, EnumUKF.create(ColumnUKF.create(other, "country"), "Germany")])
    shop = Toolkit(store, database_name=DB)
    assert [t["table"] for t in shop.db_info()["tables"]] == ["customers", "orders", "products"]
    assert shop.table_info("employees")["error_kind"] == "unknown_table"
    assert {m["table"] for m in shop.fuzzy_enum("germany")["matches"]} == {"customers"}
    everything = Toolkit(store)
    assert len(everything.db_info()["tables"]) == 4
    assert {m["table"] for m in everything.fuzzy_enum("germany")["matches"]} == {
        "customers",
        "employees",
    }


def test_indices_follow_schema_writes_only(kit: Toolkit, store: KnowledgeStore) -> None:
    before = kit.indices.get("enum")
    store.upsert(KnowledgeUKF.create("BCR", "Budget completion rate", database=DB))
    assert kit.indices.get("enum") is before  # unrelated write: no rebuild
    country = store.search(type="column", name="country")[0]
    store.upsert(EnumUKF.create(country, "Brazil", count=1))
    assert kit.fuzzy_enum("brasil")["matches"][0]["value"] == "Brazil"
    store.remove(store.search_ids(type="enum", tags={"ENUM": "Brazil"}))
    assert all(m["value"] != "Brazil" for m in kit.fuzzy_enum("brasil")["matches"])


class RecordingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.texts.extend(texts)
        return super().embed(texts)


def test_large_indices_are_embedded_in_the_background(store: KnowledgeStore) -> None:
    embedder = RecordingEmbedder()
    indices = SchemaIndices(store, database=DB, embedder=embedder, sync_embed_limit=2)
    first = indices.get("enum")
    assert len(first) > 2
    assert indices.wait_embedded(timeout=30)
    assert indices.get("enum").embedded
    assert indices.get("enum").search("untied states")[0].payload["value"] == "United States"
    country = store.search(type="column", name="country")[0]
    store.upsert(EnumUKF.create(country, "Brazil", count=1))
    embedder.texts.clear()
    rebuilt = indices.get("enum")  # one new text (<= the limit): embedded at once, reusing
    assert rebuilt.embedded and embedder.texts == ["brazil"]
    assert rebuilt.search("brasil")[0].payload["value"] == "Brazil"


# ------------------------------------------------------------------- tool calling
def test_tool_schemas_describe_every_tool(kit: Toolkit) -> None:
    schemas = roundtrip({"tools": kit.tool_schemas()})["tools"]
    assert [s["function"]["name"] for s in schemas] == list(TOOL_ARGS)
    for schema in schemas:
        function, params = schema["function"], schema["function"]["parameters"]
        assert schema["type"] == "function" and len(function["description"]) > 20
        assert "Args:" not in function["description"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        signature = inspect.signature(getattr(kit, function["name"]))
        assert set(params["properties"]) == set(signature.parameters)
        required = {n for n, p in signature.parameters.items() if p.default is p.empty}
        assert set(params["required"]) == required
        for prop in params["properties"].values():
            assert prop.get("description") and ("type" in prop or "anyOf" in prop)


def test_call_dispatches_json_arguments_and_reports_mistakes(kit: Toolkit) -> None:
    out = kit.call("fuzzy_enum", '{"query": "untied states", "k": 1}')
    assert out["matches"][0]["value"] == "United States"
    assert kit.call("db_info")["tables"]
    assert kit.call("table_info", {"table": "orders"})["table"] == "orders"
    assert kit.call("table_info", {})["error_kind"] == "invalid_arguments"
    assert kit.call("execute_sql", {"sql": "SELECT 1", "max_rows": 0})["error_kind"] == (
        "invalid_arguments"
    )
    assert kit.call("table_info", "{not json")["error_kind"] == "invalid_arguments"
    unknown = kit.call("tabel_info", {})
    assert unknown["error_kind"] == "unknown_tool" and unknown["suggestions"][0] == "table_info"
