"""The explorer: an LLM calling search tools over a profiled shop, turn by turn."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.llm.base import LLMOutputError
from agents.llm.llamacpp import LlamaCppLLM
from agents.rag.explore import Exploration, Explorer
from agents.tools.toolkit import Toolkit
from indices.facet import FacetIndex
from indices.string import StringIndex
from kb.profile.profiler import ProfileOptions, profile_database
from kb.store import KnowledgeStore
from kb.target.database import Database
from tests.agents.scripted import ScriptedLLM
from tests.kb.test_toolkit import shop_database
from ukf import KnowledgeUKF

REVENUE = KnowledgeUKF.create(
    "revenue",
    "Revenue is SUM(orders.amt_usd).",
    database="shop",
    tags=["[TABLE:orders]"],
    synonyms=["turnover", "sales amount"],
    description="Money from orders, in US dollars.",
)
ELSEWHERE = KnowledgeUKF.create("turnover", "Turnover of another company.", database="other")


@pytest.fixture()
def shop(tmp_path: Path) -> Iterator[tuple[KnowledgeStore, Toolkit]]:
    with (
        KnowledgeStore(f"sqlite:///{tmp_path / 'knowledge.db'}") as store,
        Database(shop_database(tmp_path / "shop.db")) as database,
    ):
        profile_database(
            database, store, database_name="shop", options=ProfileOptions(progress=False)
        )
        store.upsert_many([REVENUE, ELSEWHERE])
        yield store, Toolkit(store, database, database_name="shop")


def explorer(shop, replies, **options) -> Explorer:
    store, toolkit = shop
    return Explorer(
        ScriptedLLM(replies),
        toolkit,
        string_index=StringIndex.from_store(store),
        facet_index=FacetIndex(store),
        **options,
    )


def turn(tool: str, thought: str = "looking", **arguments) -> str:
    return json.dumps({"thought": thought, "tool": tool, "arguments": arguments})


def schema_id(store: KnowledgeStore, kind: str, **names: str) -> str:
    """The id of the schema entry with these content resources (table, column, value)."""
    for entry in store.iterate(type=kind):
        if all(entry.content_resources.get(k) == v for k, v in names.items()):
            return entry.id
    raise AssertionError(f"no {kind} {names}")


def results(found: Exploration) -> list[str]:
    """The tool results the model was shown, in order."""
    return [m["content"] for m in found.transcript[2:] if m["role"] == "user"]


# -------------------------------------------------------------------- normal path
def test_the_model_searches_and_the_findings_name_entries(shop) -> None:
    store, _ = shop
    replies = [
        turn("fuzzy_enum", "'the untied states' is a country value", query="untied states"),
        turn("column_info", table="customers", column="country"),
        turn("string_search", text="total turnover of our clients"),
        turn("facet_search", tags={"TABLE": "orders"}, type="knowledge"),
        turn("done", "customers.country = 'United States' and the revenue rule"),
    ]
    ex = explorer(shop, replies)
    found = ex.explore("Turnover from the untied states?", context={"query_time": "2025-03-04"})
    assert found.stop_reason == "done" and found.error is None
    assert found.conclusion == "customers.country = 'United States' and the revenue rule"
    assert [s.tool for s in found.steps] == [
        "fuzzy_enum", "column_info", "string_search", "facet_search", "done",
    ]  # fmt: skip
    united = schema_id(store, "enum", table="customers", column="country", value="United States")
    country = schema_id(store, "column", table="customers", column="country")
    assert found.ukf_ids[0] == united and country in found.ukf_ids
    assert REVENUE.id in found.ukf_ids and ELSEWHERE.id not in found.ukf_ids  # other database
    first = found.findings[0]
    assert (first.tool, first.arguments, first.step) == (
        "fuzzy_enum",
        {"query": "untied states"},
        1,
    )
    assert first.summary == "customers.country = 'United States'"
    revenue = next(f for f in found.findings if f.ukf_id == REVENUE.id)
    assert revenue.tool == "string_search" and "turnover" in revenue.summary
    assert len(found.ukf_ids) == len(found.findings)  # each entry once, at its first finding
    shown = results(found)
    assert "United States" in shown[0] and "(steps left: 4)" in shown[0]
    assert '"semantic_type": "categorical"' in shown[1]
    assert "revenue" in shown[2] and "other" not in shown[2]
    assert [m["role"] for m in found.transcript] == ["system", "user"] + [
        "assistant",
        "user",
    ] * 4 + ["assistant"]
    assert "2025-03-04" in found.transcript[1]["content"]
    assert found.prompt_tokens > 0 and found.completion_tokens > 0


def test_the_prompt_lists_the_tools_and_the_schema_constrains_the_turn(shop) -> None:
    ex = explorer(shop, [turn("done")])
    ex.explore("Which clients bought an NV-200?", known=["orders -> table orders"])
    messages, options = ex.llm.calls[0]
    system = messages[0]["content"]
    assert "- fuzzy_enum(query: string, table?: string, column?: string, k?: integer)" in system
    assert "- facet_search(tags: object, type?: string, limit?: integer)" in system
    assert "orders -> table orders" in messages[1]["content"]
    schema = options["json_schema"]
    assert schema["properties"]["tool"]["enum"] == [
        "fuzzy_enum", "fuzzy_column", "column_info", "string_search", "facet_search", "done",
    ]  # fmt: skip
    assert options["temperature"] == 0.0


def test_search_tools_need_their_indices_and_unknown_names_are_refused(shop) -> None:
    _, toolkit = shop
    ex = Explorer(ScriptedLLM([turn("done")]), toolkit)
    assert ex.tools.names == ["fuzzy_enum", "fuzzy_column", "column_info"]
    with pytest.raises(ValueError, match="none of the tools"):
        Explorer(ScriptedLLM([]), toolkit, tools=["string_search"])


# ------------------------------------------------------------- errors fed back
def test_an_unknown_tool_is_answered_with_suggestions(shop) -> None:
    replies = [turn("fuzzy_enums", query="x"), turn("execute_sql", sql="SELECT 1"), turn("done")]
    found = explorer(shop, replies).explore("anything")
    assert found.stop_reason == "done" and found.findings == []
    assert [s.error for s in found.steps[:2]] == [
        "unknown tool 'fuzzy_enums'",
        "unknown tool 'execute_sql'",  # a toolkit tool that was not offered
    ]
    assert '"suggestions": ["fuzzy_enum"' in results(found)[0]


def test_a_fuzzy_search_scoped_to_an_unknown_table_searches_everywhere(shop) -> None:
    store, _ = shop
    replies = [
        turn("fuzzy_enum", query="untied states", table="clients", column="nation"),
        turn("column_info", table="nations", column="name"),
        turn("done"),
    ]
    found = explorer(shop, replies).explore("clients in the untied states")
    recovered = json.loads(results(found)[0].split("\n", 1)[1])
    assert recovered["note"] == "unknown table 'clients': searched every table instead"
    assert recovered["matches"][0]["value"] == "United States"
    united = schema_id(store, "enum", table="customers", column="country", value="United States")
    assert found.ukf_ids == [united] and found.steps[0].error is None
    unknown = json.loads(results(found)[1].split("\n", 1)[1])
    assert unknown["error_kind"] == "unknown_table"
    assert unknown["suggestions"] == ["customers", "orders", "products"]  # every table


def test_bad_arguments_are_answered_and_exploration_goes_on(shop) -> None:
    replies = [
        turn("fuzzy_enum", q="untied states"),
        turn("column_info", table="customer", column="country"),
        json.dumps({"thought": "t", "tool": "column_info", "arguments": "customers.country"}),
        turn("facet_search", tags={"TABLE": "bad]value"}),
        turn("string_search"),
        turn("column_info", table="customer", column="country"),  # the same call again
        turn("fuzzy_column", query="order date"),
        turn("done"),
    ]
    found = explorer(shop, replies, max_steps=10).explore("orders from the untied states")
    kinds = [json.loads(text.split("\n", 1)[1]).get("error_kind") for text in results(found)]
    assert kinds == [
        "invalid_arguments",
        "unknown_table",
        "invalid_arguments",
        "invalid_arguments",
        "invalid_arguments",
        "repeated_call",
        None,
    ]
    assert "customers" in results(found)[1]  # the suggestion for 'customer'
    assert found.stop_reason == "done"
    assert [f.tool for f in found.findings] and {f.tool for f in found.findings} == {"fuzzy_column"}


# ------------------------------------------------------------------ stopping
@pytest.mark.parametrize(
    "garbage",
    [
        "I would search for the country first.",
        json.dumps([{"tool": "fuzzy_enum"}]),
        json.dumps({"thought": "no tool"}),
        LLMOutputError("model output is not JSON", "{broken"),
    ],
)
def test_garbage_ends_the_exploration_with_what_was_found(shop, garbage) -> None:
    replies = [turn("fuzzy_enum", query="untied states"), garbage, turn("done")]
    found = explorer(shop, replies).explore("customers in the untied states")
    assert found.stop_reason == "error" and found.error.startswith("step 2:")
    assert len(found.steps) == 1 and len(found.ukf_ids) >= 1


def test_exploration_stops_after_max_steps(shop) -> None:
    replies = [turn("fuzzy_enum", query=f"value {i}") for i in range(10)]
    found = explorer(shop, replies, max_steps=3).explore("anything")
    assert found.stop_reason == "max_steps" and len(found.steps) == 3
    assert "(steps left: 0)" in results(found)[-1]


def test_long_results_are_truncated_for_the_model(shop) -> None:
    replies = [turn("column_info", table="orders", column="order_date"), turn("done")]
    found = explorer(shop, replies, max_result_chars=80).explore("orders per day")
    assert results(found)[0].endswith(" …(truncated)")
    assert len(found.steps[0].result) == 80 + len(" …(truncated)")


def test_the_rag_hook_returns_the_entries(shop) -> None:
    ex = explorer(shop, [turn("fuzzy_enum", query="NV 200"), turn("done")])

    class Rag:
        hints = ('"Nova" -> products.model',)
        tables = ("products",)

    entries = ex("Nova 200 sales?", Rag())
    assert entries[0].content_resources.get("value") == "NV-200"
    prompt = ex.llm.calls[0][0][1]["content"]
    assert "tables already shown: products" in prompt and '"Nova" -> products.model' in prompt


# ------------------------------------------------------------------ real model
@pytest.fixture(scope="module")
def one_thread_llm(embedded_model_path: Path) -> LlamaCppLLM:
    """The real 0.5B model on one thread: two threads crawl when other processes share the
    two cores (measured 1-6 tok/s against 20-30 with one)."""
    return LlamaCppLLM(str(embedded_model_path), n_ctx=4096, n_threads=1, seed=11)


@pytest.mark.slow
def test_the_embedded_model_explores_within_three_steps(shop, one_thread_llm) -> None:
    store, toolkit = shop
    ex = Explorer(
        one_thread_llm,
        toolkit,
        string_index=StringIndex.from_store(store),
        facet_index=FacetIndex(store),
        max_steps=3,
        timeout=240,
    )
    found = ex.explore("How much turnover came from clients in the untied states?")
    assert found.stop_reason in ("done", "max_steps", "error")
    assert found.error is None or found.stop_reason == "error"
    assert 1 <= len(found.steps) + (found.stop_reason == "error") <= 3
    assert found.prompt_tokens > 0 and found.completion_tokens > 0
    for step in found.steps:
        assert step.tool in [*ex.tools.names, "done"] or step.error
    assert set(store.get_many(found.ukf_ids)) == set(found.ukf_ids)
    roles = [m["role"] for m in found.transcript]
    assert roles[:3] == ["system", "user", "assistant"]
