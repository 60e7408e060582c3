"""`bench.datasets` on the real public data: Spider dev and GeoQuery.

They read the benchmark data root (`../shared/data`); a missing data root fails the run.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from pathlib import Path

import pytest

from bench.datasets import (
    Dataset,
    default_data_root,
    gold_errors,
    load_dataset,
    validate_gold,
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
