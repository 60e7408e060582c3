"""Specification of `bench.datasets`: loaders, the common `Example` form, JSONL, gold validation.

Spider and GeoQuery tests read the real data under the benchmark data root (a missing data
root fails the run); BIRD and KaggleDBQA tests build tiny datasets, with real SQLite files,
in a temporary folder.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
from collections import Counter
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from bench.datasets import (
    Dataset,
    DatasetFormatError,
    Example,
    QueryContext,
    default_data_root,
    gold_errors,
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
from bench.datasets.hardness import approximate_hardness, official_hardness
from bench.datasets.text2sql import substitute_question, substitute_sql

GEOQUERY_BROKEN = [
    "geoquery-038-00",  # DERIVED_TABLE alias bug (4 paraphrases of one query)
    "geoquery-038-01",
    "geoquery-038-02",
    "geoquery-038-03",
    "geoquery-222-00",  # `> ALL (subquery)`, which SQLite does not support
]


# --- fixtures -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def data_root() -> Path:
    root = default_data_root()
    if not (root / "spider_dev").is_dir() or not (root / "geoquery").is_dir():
        pytest.fail(f"benchmark data not found under {root}; set ALMANAC_BENCH_DATA")
    return root


@pytest.fixture(scope="module")
def spider(data_root: Path) -> Dataset:
    return load_dataset("spider_dev", data_root=data_root)


@pytest.fixture(scope="module")
def geoquery(data_root: Path) -> Dataset:
    return load_dataset("geoquery", data_root=data_root)


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


# --- Spider ----------------------------------------------------------------------------------


def test_spider_dev_loads_972_usable_examples_on_19_databases(spider: Dataset) -> None:
    assert spider.name == "spider_dev"
    assert len(spider) == 972
    assert len(spider.databases) == 19
    assert "wta_1" not in spider.databases
    for url in spider.databases.values():
        path = sqlite_path(url)
        assert path is not None and path.is_file()
    assert all(ex.database_url == spider.databases[ex.database] for ex in spider)
    assert len({ex.id for ex in spider}) == 972


def test_spider_logs_the_skipped_questions(
    data_root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="bench.datasets"):
        load_dataset("spider_dev", data_root=data_root)
    assert "skipped 62 of 1034 questions" in caplog.text
    assert "wta_1 (62)" in caplog.text


def test_spider_known_examples(spider: Dataset) -> None:
    first = spider[0]
    assert first.id == "spider_dev-0000"
    assert first.question == "How many singers do we have?"
    assert first.database == "concert_singer"
    assert first.gold_sql == ["SELECT count(*) FROM singer"]
    assert not first.order_relevant
    assert (first.difficulty, first.split, first.tags) == ("easy", "dev", ["[DATASET:spider]"])

    ordered = spider.get("spider_dev-0002")
    assert ordered.gold_sql == ["SELECT name ,  country ,  age FROM singer ORDER BY age DESC"]
    assert ordered.order_relevant
    nested_order = spider.get("spider_dev-0043")  # ORDER BY only inside a subquery
    assert "order by" in nested_order.canonical_sql
    assert not nested_order.order_relevant
    assert sum(ex.order_relevant for ex in spider) == 209


def test_spider_difficulty_distribution(spider: Dataset) -> None:
    assert Counter(ex.difficulty for ex in spider) == {
        "easy": 232,
        "medium": 416,
        "hard": 160,
        "extra": 164,
    }


def test_sqlglot_hardness_approximation_matches_the_official_rule_on_spider_dev(
    data_root: Path,
) -> None:
    entries = json.loads((data_root / "spider_dev" / "dev.json").read_text())
    official = [official_hardness(entry["sql"]) for entry in entries]
    assert Counter(official) == {"easy": 248, "medium": 446, "hard": 174, "extra": 166}
    approximate = [approximate_hardness(entry["query"]) for entry in entries]
    agreement = sum(a == o for a, o in zip(approximate, official, strict=True)) / len(entries)
    assert agreement >= 0.98


def test_approximate_hardness_on_simple_shapes() -> None:
    assert approximate_hardness("SELECT count(*) FROM singer") == "easy"
    assert approximate_hardness("SELECT name, age FROM singer ORDER BY age") == "medium"
    assert approximate_hardness("SELECT a FROM t EXCEPT SELECT a FROM s") == "hard"
    assert (
        approximate_hardness(
            "SELECT T2.name FROM a AS T1 JOIN b AS T2 ON T1.id = T2.id "
            "WHERE T1.y > 1 GROUP BY T2.id ORDER BY count(*) DESC LIMIT 1"
        )
        == "extra"
    )
    assert approximate_hardness("NOT SQL AT ALL (") is None


def test_spider_gold_queries_all_execute(spider: Dataset) -> None:
    assert validate_gold(spider) == []


# --- GeoQuery (text2sql-data) ----------------------------------------------------------------


def test_geoquery_loads_877_questions_with_question_split(geoquery: Dataset) -> None:
    assert len(geoquery) == 877
    assert geoquery.databases.keys() == {"geography"}
    assert Counter(ex.split for ex in geoquery) == {"train": 549, "test": 279, "dev": 49}
    assert geoquery[0].question == "what is the biggest city in arizona"
    assert "CITYalias1.STATE_NAME = 'arizona'" in geoquery[0].canonical_sql
    assert geoquery[0].tags == ["[DATASET:geoquery]"]


def test_geoquery_can_use_the_query_split(data_root: Path) -> None:
    dataset = load_dataset("geoquery", data_root=data_root, split_by="query")
    assert Counter(ex.split for ex in dataset) == {"train": 536, "test": 182, "dev": 159}
    assert all(ex.metadata["query_split"] == ex.split for ex in dataset)


def test_geoquery_variables_are_substituted_everywhere(geoquery: Dataset) -> None:
    placeholder = re.compile(r"\b[a-z]+(?:_[a-z]+)+\d+\b")
    for example in geoquery:
        for text in [example.question, *example.gold_sql]:
            assert not placeholder.search(text), (example.id, text)
    with_variables = [ex for ex in geoquery if ex.metadata["variables"]]
    assert len(with_variables) > 400
    for example in with_variables:
        for value in example.metadata["variables"].values():
            assert value in example.question
            assert f"'{value}'" in example.canonical_sql


def test_text2sql_substitution_rules() -> None:
    values = {"state_name1": "texas", "state_name10": "o'hare", "year0": "1990"}
    assert substitute_question("from state_name10 to state_name1", values) == "from o'hare to texas"
    assert (
        substitute_sql("WHERE s = \"state_name1\" AND t = 'state_name10' AND y > year0", values)
        == "WHERE s = 'texas' AND t = 'o''hare' AND y > 1990"
    )


def test_validate_gold_finds_the_five_broken_geoquery_queries(geoquery: Dataset) -> None:
    errors = gold_errors(geoquery)
    assert list(errors) == GEOQUERY_BROKEN
    assert sum("DERIVED_TABLEalias1" in message for message in errors.values()) == 4
    assert 'near "ALL"' in errors["geoquery-222-00"]
    assert validate_gold(geoquery) == GEOQUERY_BROKEN


def test_geoquery_can_drop_failing_gold(data_root: Path) -> None:
    dataset = load_dataset("geoquery", data_root=data_root, drop_failing_gold=True)
    assert len(dataset) == 872
    assert not set(GEOQUERY_BROKEN) & {ex.id for ex in dataset}


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
