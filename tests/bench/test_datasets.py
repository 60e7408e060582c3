"""Specification of `bench.datasets`: the common `Example` form, BIRD and KaggleDBQA layouts
(tiny datasets with real SQLite files built in a temporary folder), JSONL, and the registry.
Spider and GeoQuery on the real data: `test_datasets_public.py`.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from bench.datasets import (
    Dataset,
    DatasetFormatError,
    Example,
    QueryContext,
    default_data_root,
    has_top_level_order_by,
    load_almanac_jsonl,
    load_bird,
    load_dataset,
    load_kaggledbqa,
    make_tag,
    read_jsonl,
    validate_gold,
    write_jsonl,
)
from bench.datasets.dataset import sqlite_path

# --- fixtures -------------------------------------------------------------------------------


def make_sqlite(path: Path, script: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as connection:
        connection.executescript(script)
    connection.close()
    return path


def write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


@pytest.fixture
def bird_root(tmp_path: Path) -> Path:
    root = tmp_path / "bird_mini"
    make_sqlite(
        root / "dev_databases" / "shop" / "shop.sqlite",
        "CREATE TABLE orders (id INTEGER, amount REAL, city TEXT);"
        "INSERT INTO orders VALUES (1, 10.0, 'Paris'), (2, 25.5, 'Lyon');",
    )
    entries = [
        {
            "question_id": 0,
            "db_id": "shop",
            "question": "How many orders are there? ",
            "evidence": "",
            "SQL": "SELECT COUNT(*) FROM orders",
            "difficulty": "simple",
        },
        {
            "question_id": 1,
            "db_id": "shop",
            "question": "List cities by total amount, largest first.",
            "evidence": "total amount refers to SUM(amount)",
            "SQL": "SELECT city FROM orders GROUP BY city ORDER BY SUM(amount) DESC",
            "difficulty": "moderate",
        },
        {
            "question_id": 2,
            "db_id": "missing_db",
            "question": "Anything?",
            "evidence": "",
            "SQL": "SELECT 1",
            "difficulty": "challenging",
        },
        {
            "question_id": 3,
            "db_id": "shop",
            "question": "Which column does not exist?",
            "evidence": "",
            "SQL": "SELECT price FROM orders",
            "difficulty": "simple",
        },
    ]
    write_json(root / "dev.json", entries)
    return root


@pytest.fixture
def kaggle_root(tmp_path: Path) -> Path:
    root = tmp_path / "kaggledbqa"
    make_sqlite(
        root / "databases" / "Pesticide" / "Pesticide.sqlite",
        "CREATE TABLE samples (id INTEGER, state TEXT); INSERT INTO samples VALUES (1, 'CA');",
    )
    test = [
        {
            "db_id": "Pesticide",
            "question": "How many samples?",
            "query": "SELECT count(*) FROM samples",
        },
        {
            "db_id": "Pesticide",
            "question": "Which states have samples?",
            "question_toks": ["Which", "states", "have", "samples", "?"],
            "query": "SELECT DISTINCT state FROM samples ORDER BY state",
        },
    ]
    fewshot = [
        {"db_id": "Pesticide", "question": "List sample ids.", "query": "SELECT id FROM samples"}
    ]
    write_json(root / "examples" / "Pesticide_test.json", test)
    write_json(root / "examples" / "Pesticide_fewshot.json", fewshot)
    write_json(root / "examples" / "Pesticide.json", test + fewshot)  # combined file: ignored
    return root


def rich_example() -> Example:
    return Example(
        id="sales-001",
        question="Revenue last month, by region?",
        database="sales",
        database_url="sqlite:////data/sales.sqlite",
        context=QueryContext(
            query_time=datetime(2024, 5, 1, 9, 30, 15, 250, tzinfo=timezone(timedelta(hours=8))),
            user_profile={"region": "EU", "role": "analyst", "weights": [0.1, 2.5]},
        ),
        gold_sql=["SELECT region, SUM(x) FROM t GROUP BY region", "SELECT region, TOTAL(x) ..."],
        gold_sql_by_dialect={"postgresql": ["SELECT region, SUM(x) FROM t GROUP BY 1"]},
        tags=[make_tag("TRAIT", "implicit_intent"), "[DATASET:almanac]"],
        difficulty="medium",
        split="test",
        evidence="last month = the calendar month before query_time",
        metadata={"source": "hand-written", "ünïcode": "😀"},
    )


# --- Example ---------------------------------------------------------------------------------


def test_order_relevant_defaults_to_top_level_order_by_of_canonical_gold() -> None:
    def make(*gold: str, **fields: object) -> Example:
        return Example(id="x", question="q", database="db", gold_sql=list(gold), **fields)

    assert make("SELECT a FROM t ORDER BY a").order_relevant
    assert make("SELECT a FROM t UNION SELECT b FROM s ORDER BY 1").order_relevant
    assert not make("SELECT a FROM t WHERE b = (SELECT b FROM s ORDER BY c LIMIT 1)").order_relevant
    assert not make("SELECT a, RANK() OVER (ORDER BY b) FROM t").order_relevant
    assert not make(
        "SELECT a FROM t", "SELECT a FROM t ORDER BY a"
    ).order_relevant  # canonical only
    assert not make("SELECT a FROM t ORDER BY a", order_relevant=False).order_relevant  # explicit


def test_order_by_detection_falls_back_to_regex_when_sqlglot_cannot_parse() -> None:
    assert has_top_level_order_by("SELECT a FROM t ORDER BY a ))) garbage (")
    assert not has_top_level_order_by("SELECT ( x ORDER BY y ) FROM t WHERE (((")
    assert not has_top_level_order_by("SELECT 'order by' FROM t WHERE ((")


def test_example_validates_tags_and_gold() -> None:
    assert make_tag("DATASET", "spider") == "[DATASET:spider]"
    assert make_tag("trait", "x") == "[TRAIT:x]"  # slots are normalised to upper case
    with pytest.raises(ValueError, match="malformed tag"):
        make_tag("1trait", "x")
    with pytest.raises(ValueError, match="tags"):
        Example(id="x", question="q", database="d", gold_sql=["SELECT 1"], tags=["DATASET:spider"])
    with pytest.raises(ValueError, match="gold_sql"):
        Example(id="x", question="q", database="d", gold_sql=[])


def test_example_helpers() -> None:
    example = rich_example()
    assert example.canonical_sql == example.gold_sql[0]
    assert example.gold_for("postgresql") == ["SELECT region, SUM(x) FROM t GROUP BY 1"]
    assert example.gold_for("sqlite") == example.gold_sql
    assert example.tag_values("TRAIT") == ["implicit_intent"]


def test_dataset_filter_and_lookup() -> None:
    examples = [
        Example(id=f"e{i}", question="q", database=f"db{i % 2}", gold_sql=["SELECT 1"], split=s)
        for i, s in enumerate(["dev", "test", "dev", "test", "dev"])
    ]
    dataset = Dataset("toy", examples, {"db0": "sqlite:////a", "db1": "sqlite:////b"})
    assert [e.id for e in dataset.filter(split="dev")] == ["e0", "e2", "e4"]
    assert [e.id for e in dataset.filter(split="dev", limit=2)] == ["e0", "e2"]
    assert dataset.filter(split="dev").databases == {"db0": "sqlite:////a"}
    assert len(dataset.filter(split=["dev", "test"], exclude_ids=["e1"])) == 4
    assert dataset.get("e3").split == "test"
    assert sqlite_path("sqlite:////a/b.sqlite") == Path("/a/b.sqlite")
    assert sqlite_path("postgresql://host/db") is None


# --- BIRD and KaggleDBQA (fixtures) ----------------------------------------------------------


def test_bird_layout(bird_root: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="bench.datasets"):
        dataset = load_bird(bird_root)
    assert "skipped 1 of 4 questions" in caplog.text
    assert [ex.id for ex in dataset] == ["bird_mini-0", "bird_mini-1", "bird_mini-3"]
    first, second = dataset[0], dataset[1]
    assert first.question == "How many orders are there?"
    assert (first.evidence, first.difficulty, first.split) == (None, "simple", "dev")
    assert second.evidence == "total amount refers to SUM(amount)"
    assert second.order_relevant and not first.order_relevant
    assert second.tags == ["[DATASET:bird]"]
    assert sqlite_path(dataset.databases["shop"]) == bird_root / "dev_databases/shop/shop.sqlite"
    assert validate_gold(dataset) == ["bird_mini-3"]


def test_kaggledbqa_layout(kaggle_root: Path) -> None:
    dataset = load_kaggledbqa(kaggle_root)
    assert [(ex.id, ex.split) for ex in dataset] == [
        ("kaggledbqa-Pesticide-test-000", "test"),
        ("kaggledbqa-Pesticide-test-001", "test"),
        ("kaggledbqa-Pesticide-fewshot-000", "fewshot"),
    ]
    assert dataset[1].order_relevant
    assert dataset[0].tags == ["[DATASET:kaggledbqa]"]
    assert [ex.id for ex in dataset.filter(split="fewshot")] == ["kaggledbqa-Pesticide-fewshot-000"]
    assert len(load_kaggledbqa(kaggle_root, splits=["test"])) == 2
    assert validate_gold(dataset) == []
    with pytest.raises(ValueError, match="unknown KaggleDBQA splits"):
        load_kaggledbqa(kaggle_root, splits=["train"])


# --- Almanac JSONL ---------------------------------------------------------------------------


def test_almanac_jsonl_round_trip_is_exact(tmp_path: Path) -> None:
    minimal = Example(id="m", question="q?", database="sales", gold_sql=["SELECT 1 ORDER BY 1"])
    examples = [rich_example(), minimal]
    path = tmp_path / "set.jsonl"
    assert write_jsonl(examples, path) == 2
    assert read_jsonl(path) == examples
    copy = tmp_path / "copy.jsonl"
    write_jsonl(read_jsonl(path), copy)
    assert copy.read_bytes() == path.read_bytes()
    assert json.loads(path.read_text(encoding="utf-8").splitlines()[1]) == {
        "id": "m",
        "question": "q?",
        "database": "sales",
        "gold_sql": ["SELECT 1 ORDER BY 1"],
        "order_relevant": True,
    }


def test_almanac_jsonl_reads_hand_written_lines(tmp_path: Path) -> None:
    path = tmp_path / "hand.jsonl"
    lines = [
        {
            "id": "h1",
            "question": "Top customers this year?",
            "database": "sales",
            "context": {"query_time": "2024-03-01T12:00:00Z", "user_profile": {"team": "emea"}},
            "gold_sql": ["SELECT c FROM t ORDER BY v DESC LIMIT 5"],
            "gold_sql_by_dialect": {"sqlite": ["SELECT c FROM t ORDER BY v DESC LIMIT 5"]},
            "tags": ["[TRAIT:implicit_intent]"],
        },
        {"id": "h2", "question": "Count?", "database": "other", "gold_sql": ["SELECT 1"]},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n", encoding="utf-8")
    dataset = load_almanac_jsonl(path, databases={"sales": "sqlite:////db/sales.sqlite"})
    assert dataset.name == "hand"
    first, second = dataset
    assert first.context.query_time == datetime(2024, 3, 1, 12, tzinfo=UTC)
    assert first.order_relevant and not second.order_relevant
    assert first.database_url == "sqlite:////db/sales.sqlite" and second.database_url is None
    assert dataset.databases == {"sales": "sqlite:////db/sales.sqlite"}


@pytest.mark.parametrize(
    ("line", "field", "message"),
    [
        (
            '{"id": "a", "question": "q", "database": "d", "gold_sql": ["SELECT 1"]',
            None,
            "invalid JSON",
        ),
        ('["not", "an", "object"]', None, "expected a JSON object"),
        ('{"id": "a", "question": "q", "database": "d"}', "gold_sql", "Field required"),
        ('{"id": "a", "question": "q", "database": "d", "gold_sql": "SELECT 1"}', "gold_sql", ""),
        (
            '{"id": "a", "question": "q", "database": "d", "gold_sql": ["SELECT 1"],'
            ' "context": {"query_time": "yesterday"}}',
            "context.query_time",
            "datetime",
        ),
        (
            '{"id": "a", "question": "q", "database": "d", "gold_sql": ["SELECT 1"],'
            ' "tags": ["[TRAIT:x]", "oops"]}',
            "tags",
            "malformed tag",
        ),
        (
            '{"id": "a", "question": "q", "database": "d", "gold_sql": ["SELECT 1"], "sql": "x"}',
            "sql",
            "Extra inputs",
        ),
        (
            '{"id": "ok", "question": "q", "database": "d", "gold_sql": ["SELECT 1"]}',
            "id",
            "duplicate",
        ),
    ],
)
def test_almanac_jsonl_malformed_line_names_file_line_and_field(
    tmp_path: Path, line: str, field: str | None, message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    good = '{"id": "ok", "question": "q", "database": "d", "gold_sql": ["SELECT 1"]}'
    path.write_text(f"{good}\n\n{line}\n", encoding="utf-8")
    with pytest.raises(DatasetFormatError) as caught:
        read_jsonl(path)
    error = caught.value
    assert (error.path, error.line, error.field) == (path, 3, field)
    assert str(error).startswith(f"{path}:3: ")
    assert message in str(error)


# --- registry --------------------------------------------------------------------------------


def test_load_dataset_by_path_detects_the_layout(
    bird_root: Path, kaggle_root: Path, tmp_path: Path
) -> None:
    assert load_dataset(bird_root)[0].tags == ["[DATASET:bird]"]
    assert load_dataset(kaggle_root).name == "kaggledbqa"
    jsonl = tmp_path / "mine.jsonl"
    write_jsonl([rich_example()], jsonl)
    assert load_dataset(jsonl).examples == [rich_example()]
    assert load_dataset(bird_root, layout="bird", name="tiny").name == "tiny"


def test_load_dataset_data_root_resolution(
    bird_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ALMANAC_BENCH_DATA", raising=False)
    repository = Path(__file__).resolve().parents[2]
    beside = repository.parent / "shared" / "data"
    assert default_data_root() == (beside if beside.exists() else Path("/work/shared/data"))
    monkeypatch.setenv("ALMANAC_BENCH_DATA", str(bird_root.parent))
    assert default_data_root() == bird_root.parent
    with pytest.raises(FileNotFoundError, match="neither a known dataset"):
        load_dataset("no_such_dataset")
    with pytest.raises(ValueError, match="unknown dataset layout"):
        load_dataset(bird_root, layout="csv")
