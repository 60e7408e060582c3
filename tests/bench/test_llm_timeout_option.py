"""``--llm-timeout``: how long one model call of the chain may take (default: ``--timeout``),
so that a long schema prompt on a slow CPU is not cut off at the chain's own 120 s and
answered again from a plain prompt; the manifest records it only when given."""

from __future__ import annotations

import json
import sqlite3

import pytest

from bench.__main__ import _system_options
from bench.__main__ import main as bench_main
from bench.cli_parser import build_parser
from bench.datasets import Example, write_jsonl
from bench.systems import make_system
from indices.embeddings import HashingEmbedder
from tests.agents.scripted import ScriptedLLM, sql_reply


@pytest.fixture()
def shop(tmp_path) -> Example:
    db = tmp_path / "shop.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, region TEXT, amount REAL)")
        conn.executemany("INSERT INTO orders VALUES (?, ?, ?)", [(1, "EU", 5.0), (2, "US", 7.0)])
    return Example(
        id="q0",
        question="How many orders?",
        database="shop",
        database_url=f"sqlite:///{db}",
        gold_sql=["SELECT COUNT(*) FROM orders"],
    )


def _arguments(*flags: str) -> list[str]:
    return ["run", "--dataset", "spider_dev", "--system", "almanac", *flags]


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ([], 120.0),  # --timeout's default: the chain's own limit, as before
        (["--timeout", "600"], 600.0),
        (["--timeout", "600", "--llm-timeout", "900"], 900.0),
    ],
)
def test_every_model_call_of_the_chain_gets_the_limit(shop, flags, expected):
    options = _system_options(build_parser().parse_args(_arguments(*flags)))
    assert options["llm_timeout"] == expected
    model = ScriptedLLM([sql_reply("SELECT COUNT(*) FROM orders")])
    system = make_system("almanac", **options, llm=model, embedder=HashingEmbedder())
    try:
        system.prepare({"shop": shop.database_url})
        assert system.predict(shop, "sqlite").sql == "SELECT COUNT(*) FROM orders"
    finally:
        system.workspace.close()
    assert model.calls and {o.get("timeout") for _, o in model.calls} == {expected}
    baseline_model = ScriptedLLM([sql_reply("SELECT 1")])
    baseline = make_system("ddl-only", **options, llm=baseline_model, embedder=HashingEmbedder())
    try:
        baseline.predict(shop, "sqlite")
    finally:
        baseline.workspace.close()
    assert [o.get("timeout") for _, o in baseline_model.calls] == [expected]


def test_a_call_past_the_limit_falls_back_to_the_plain_prompt(shop):
    """What the default limit did to a long prompt on a slow machine: the call is cut off,
    and the chain answers again from a plain prompt (logged), which the option avoids."""
    slow = ScriptedLLM([sql_reply("SELECT COUNT(*) FROM orders")], delay_s=0.3)
    system = make_system("almanac", llm=slow, embedder=HashingEmbedder(), llm_timeout=0.1)
    try:
        system.prepare({"shop": shop.database_url})
        system.predict(shop, "sqlite")
    finally:
        system.workspace.close()
    assert len(slow.calls) >= 2  # the cut-off call, then the plain prompt's


def test_the_manifest_records_the_limit_only_when_given(shop, tmp_path, capsys):
    path = tmp_path / "shop.jsonl"
    write_jsonl([shop], path)
    base = ["run", "--dataset", str(path), "--system", "gold"]
    assert bench_main([*base, "--out", str(tmp_path / "default")]) == 0
    assert bench_main([*base, "--llm-timeout", "900", "--out", str(tmp_path / "given")]) == 0
    default = json.loads((tmp_path / "default" / "run.json").read_text())
    given = json.loads((tmp_path / "given" / "run.json").read_text())
    assert "llm_timeout" not in default and given["llm_timeout"] == 900.0
    again = [*base, "--llm-timeout", "300", "--out", str(tmp_path / "given")]
    capsys.readouterr()
    assert bench_main(again) != 0  # a resumed run keeps the limit it was started with
    assert "holds another run" in capsys.readouterr().err
