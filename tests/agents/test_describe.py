"""LLM descriptions and synonyms for profiled schema: batching, cleaning, garbage, profiling."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agents.learn.describe import (
    MAX_DESCRIPTION_CHARS,
    DescriberError,
    LLMDescriber,
    clean_description,
    clean_synonyms,
)
from agents.llm.base import LLMOutputError, Message
from agents.llm.llamacpp import LlamaCppLLM
from kb.profile.entries import name_variants
from kb.profile.profiler import (
    ColumnProfile,
    Description,
    ProfileOptions,
    TableProfile,
    profile_database,
)
from kb.store import KnowledgeStore
from kb.target.database import Database
from tests.agents.scripted import ScriptedLLM

QUIET = ProfileOptions(progress=False, categorical_max_distinct=10)
STATUSES = ("open", "shipped", "returned")


def orders_profile(*names: str) -> TableProfile:
    columns = [ColumnProfile(name, "TEXT", "text", examples=[f"{name}-1"]) for name in names]
    return TableProfile("orders", "table", 120, columns)


def item(key: str, name: str, description: str | None = None, synonyms=None) -> dict[str, Any]:
    return {
        key: name,
        "description": f"About {name}." if description is None else description,
        "synonyms": [f"{name} alias"] if synonyms is None else synonyms,
    }


def listed(messages: list[Message]) -> list[str]:
    """The items a prompt lists (``- name ...`` lines)."""
    return re.findall(r"^- (.+?)(?: \(|$)", messages[-1]["content"], flags=re.MULTILINE)


def describe_everything(messages: list[Message], options: dict[str, Any]) -> str:
    """A well-behaved model: describes every item its prompt lists."""
    fields = options["json_schema"]["properties"]
    names = listed(messages)
    if "values" in fields:
        return json.dumps({"values": [item("value", v) for v in names]})
    columns = [item("name", c) for c in names]
    if "description" in fields:  # the table call
        table = re.search(r'Table "(\w+)"', messages[-1]["content"]).group(1)
        return json.dumps({**item("name", table), "columns": columns})
    return json.dumps({"columns": columns})


# ---------------------------------------------------------------------- batching
def test_one_call_describes_a_table_and_its_columns() -> None:
    answer = {
        "description": "  Customer   orders,\none row each. ",
        "synonyms": ["orders", "ORDERS", "sales orders", "Cust NM", "purchases", "Sales Orders"],
        "columns": [
            item("name", "cust_nm", "Name of the customer.",
                 ["cust_nm", "Cust NM", " client  name ", "CLIENT NAME", "customer",
                  "a very long phrase that nobody would ever type into a question box",
                  "buyer", "purchaser", "account holder", "patron"]),
            item("name", "AMT_USD", "Order amount in dollars.", ["amount", "revenue"]),
            item("name", "ghost", "Not a column.", ["x"]),
        ],
    }  # fmt: skip
    llm = ScriptedLLM([json.dumps(answer)])
    describer = LLMDescriber(llm)
    table = orders_profile("cust_nm", "amt_usd")
    found = describer.describe_table(table)
    assert found.description == "Customer orders, one row each."
    assert found.synonyms == ("sales orders", "purchases")
    cust = describer.describe_column(table, table.columns[0])
    assert cust.synonyms == ("client name", "customer", "buyer", "purchaser", "account holder")
    assert describer.describe_column(table, table.columns[1]).synonyms == ("amount", "revenue")
    assert describer.calls == 1 and len(llm.calls) == 1
    messages, options = llm.calls[0]
    assert (
        "cust_nm (TEXT, text)" in messages[1]["content"] and "cust_nm-1" in messages[1]["content"]
    )
    schema = options["json_schema"]
    assert schema["properties"]["columns"]["maxItems"] == 2
    assert schema["properties"]["synonyms"]["maxItems"] == 5


def test_later_columns_are_asked_in_batches_and_omissions_alone() -> None:
    def forgets_d(messages: list[Message], options: dict[str, Any]) -> str:
        answer = json.loads(describe_everything(messages, options))
        if len(listed(messages)) > 1:
            answer["columns"] = [c for c in answer["columns"] if c["name"] != "d"]
        return json.dumps(answer)

    llm = ScriptedLLM([forgets_d])
    describer = LLMDescriber(llm, batch=2)
    table = orders_profile("a", "b", "c", "d", "e")
    describer.describe_table(table)  # a, b
    found = {c.name: describer.describe_column(table, c).description for c in table.columns}
    assert found == {name: f"About {name}." for name in "abcde"}
    assert [listed(messages) for messages, _ in llm.calls] == [
        ["a", "b"],
        ["c", "d"],
        ["d"],  # left out of its batch: asked alone
        ["e"],
    ]


def test_columns_of_a_commented_table_are_batched_without_a_table_call() -> None:
    llm = ScriptedLLM([describe_everything])
    describer = LLMDescriber(llm, batch=3)
    table = orders_profile("a", "b", "c", "d")
    for column in table.columns:
        assert describer.describe_column(table, column).synonyms == (f"{column.name} alias",)
    assert [listed(messages) for messages, _ in llm.calls] == [["a", "b", "c"], ["d"]]


def test_enum_values_are_described_per_column_in_one_call() -> None:
    llm = ScriptedLLM([describe_everything])
    describer = LLMDescriber(llm, enum_batch=10)
    status = ColumnProfile(
        "status_cd", "INTEGER", "categorical", enum_values=[(1, 5, 0.5), (2, 3, 0.3), (9, 2, 0.2)]
    )
    table = TableProfile("orders", "table", 10, [status])
    described = {v: describer.describe_enum(table, status, v) for v in (1, 2, 9)}
    assert described[9].description == "About 9." and described[9].synonyms == ("9 alias",)
    assert len(llm.calls) == 1 and listed(llm.calls[0][0]) == ["1", "2", "9"]
    assert 'Column "status_cd" of table "orders"' in llm.calls[0][0][1]["content"]


def test_values_of_columns_with_many_values_are_not_described() -> None:
    llm = ScriptedLLM([describe_everything])
    names = ColumnProfile(
        "cust_nm", "TEXT", "categorical", enum_values=[(f"c{i}", 1, 0.01) for i in range(40)]
    )
    table = TableProfile("orders", "table", 40, [names])
    assert LLMDescriber(llm, enum_max_values=30).describe_enum(table, names, "c1") == Description()
    assert llm.calls == []
    assert LLMDescriber(llm, enum_max_values=40).describe_enum(table, names, "c1").description


def test_a_failed_batch_falls_back_to_one_call_per_item() -> None:
    llm = ScriptedLLM(["{not json", describe_everything])
    describer = LLMDescriber(llm)
    table = orders_profile("a", "b")
    assert describer.describe_column(table, table.columns[0]).description == "About a."
    assert describer.describe_column(table, table.columns[1]).description == "About b."
    assert [listed(messages) for messages, _ in llm.calls] == [["a", "b"], ["a"], ["b"]]


# ----------------------------------------------------------------------- garbage
@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("I think this table holds orders.", "Invalid JSON"),
        (json.dumps({"description": "Orders.", "columns": []}), "synonyms: Field required"),
        (json.dumps({"description": 3, "synonyms": [], "columns": []}), "description"),
        (json.dumps({"description": "  ", "synonyms": ["x"], "columns": []}), "empty description"),
        (LLMOutputError("model output is not JSON", "{broken"), "not JSON"),
    ],
)
def test_garbage_is_a_clear_error_with_the_raw_output(reply: Any, problem: str) -> None:
    describer = LLMDescriber(ScriptedLLM([reply]))
    with pytest.raises(DescriberError, match=problem) as caught:
        describer.describe_table(orders_profile("a"))
    assert "table 'orders'" in str(caught.value) and caught.value.raw


def test_a_column_the_model_never_describes_is_an_error() -> None:
    llm = ScriptedLLM([json.dumps({"columns": [item("name", "other")]})])
    table = orders_profile("a", "b")
    with pytest.raises(DescriberError, match=r"column orders\.a: no usable answer"):
        LLMDescriber(llm).describe_column(table, table.columns[0])


def test_descriptions_cut_at_the_length_cap_end_cleanly() -> None:
    cut = "The orders table lists every order. " + "It keeps the customer and the amount " * 6
    assert clean_description(cut[:MAX_DESCRIPTION_CHARS]) == "The orders table lists every order."
    words = "words " * 60  # the cap falls inside the 34th word
    assert clean_description(words) == ("words " * 33).strip() + "…"
    assert clean_description(" Short,\n  fine. ") == "Short, fine."


def test_synonym_cleaning_rules() -> None:
    assert clean_synonyms("CustomerName", ["customer name", "Customer-Name", "client"], 5) == (
        "client",
    )
    assert clean_synonyms("x", ["", "  ", '"quoted"', "a b c d e f g"], 5) == ("quoted",)
    assert clean_synonyms("x", [f"s{i}" for i in range(9)], 3) == ("s0", "s1", "s2")


# --------------------------------------------------------------------- profiling
def build_orders(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, cust_nm TEXT, amt_usd REAL,"
            " status TEXT)"
        )
        first, last = (
            ("Ann", "Bo", "Cy", "Di", "Ed", "Flo"),
            ("Lee", "Chan", "Diaz", "Evans", "Fox"),
        )
        conn.executemany(
            "INSERT INTO orders VALUES (?, ?, ?, ?)",
            [
                (i, f"{first[i % 6]} {last[i // 6 % 5]} {i}", 10.0 + 3 * i, STATUSES[i % 3])
                for i in range(1, 61)
            ],
        )
    conn.close()
    return f"sqlite:///{path}"


def profile_orders(tmp_path: Path, describer: LLMDescriber) -> KnowledgeStore:
    store = KnowledgeStore(f"sqlite:///{tmp_path / 'knowledge.db'}")
    with Database(build_orders(tmp_path / "orders.db")) as database:
        profile_database(database, store, database_name="shop", describer=describer, options=QUIET)
    return store


def test_profiling_stores_what_the_describer_says(tmp_path: Path) -> None:
    def fails_on_returned(messages: list[Message], options: dict[str, Any]) -> str:
        if listed(messages) == ["returned"]:
            return "no idea"
        answer = json.loads(describe_everything(messages, options))
        if "values" in answer:
            answer["values"] = [v for v in answer["values"] if v["value"] != "returned"]
        return json.dumps(answer)

    describer = LLMDescriber(ScriptedLLM([fails_on_returned]))
    with profile_orders(tmp_path, describer) as store:
        entries = {e.name: e for e in store.iterate(type=["table", "column", "enum"])}
    assert entries["orders"].description == "About orders."
    assert "orders alias" in entries["orders"].synonyms
    assert entries["cust_nm"].description == "About cust_nm."
    assert {"cust nm", "cust_nm alias"} <= set(entries["cust_nm"].synonyms)
    assert entries["shipped"].description == "About shipped."
    assert entries["returned"].description == ""  # garbage answer: logged, profiling went on
    assert describer.calls == 3  # table + 4 columns, then 3 values, then 'returned' alone


@pytest.fixture(scope="module")
def one_thread_llm(embedded_model_path: Path) -> LlamaCppLLM:
    """The real 0.5B model on one thread: two threads crawl when other processes share the
    two cores (measured 1-6 tok/s against 20-30 with one)."""
    return LlamaCppLLM(str(embedded_model_path), n_ctx=4096, n_threads=1, seed=11)


@pytest.mark.slow
def test_the_embedded_model_describes_a_profiled_table(tmp_path: Path, one_thread_llm) -> None:
    describer = LLMDescriber(one_thread_llm, max_tokens=768)
    with profile_orders(tmp_path, describer) as store:
        entries = list(store.iterate(type=["table", "column", "enum"]))
    assert len(entries) == 1 + 4 + 3
    described = [e for e in entries if e.description]
    assert len(described) == len(entries), [e.name for e in entries if not e.description]
    invented = [s for e in entries for s in e.synonyms if s not in name_variants(e.name)]
    assert {s.casefold() for s in invented} - {e.name.casefold() for e in entries}, invented
    assert describer.calls < len(entries)  # batched: fewer calls than entries
