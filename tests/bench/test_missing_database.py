"""A run whose databases cannot be opened is refused before anything is asked, naming each
database and why: no URL, a SQLite file that is not there or holds no tables. Without this a
run answered every question, scored none and printed a table of zeros."""

from __future__ import annotations

import importlib
import json
import sqlite3
from pathlib import Path

import pytest

from bench.__main__ import main as bench_main
from bench.datasets import (
    Dataset,
    Example,
    MissingDatabaseError,
    database_problems,
    load_almanac_jsonl,
    require_databases,
)
from bench.distill_eval import select_questions
from distill.eval_inputs import EvalError, Sample


def write_questions(
    folder: Path, database: str = "shop", splits: tuple[str, ...] = ("test",)
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "questions.jsonl"
    lines = [
        {"id": f"{split}{i}", "question": f"How many orders ({i})?", "database": database,
         "split": split, "gold_sql": ["SELECT COUNT(*) FROM orders"]}
        for split in splits
        for i in range(3)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def make_shop(path: Path) -> Path:
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
        connection.execute("INSERT INTO orders VALUES (1)")
    connection.close()
    return path


def test_a_jsonl_dataset_without_its_sqlite_beside_it_is_refused_naming_the_file(tmp_path, capsys):
    questions = write_questions(tmp_path / "data")
    out = tmp_path / "out"
    argv = ["run", "--dataset", str(questions), "--system", "gold", "--out", str(out)]
    assert bench_main(argv) == 2
    error = capsys.readouterr().err
    assert "1 database of questions cannot be opened; nothing was asked" in error
    assert f"shop: no database URL, and no {questions.parent / 'shop.sqlite'} beside" in error
    assert not (out / "results.jsonl").exists()
    make_shop(questions.parent / "shop.sqlite")  # once the file is there, the same run scores
    assert bench_main(argv) == 0
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["scores"]["ex"] for r in results] == [1.0, 1.0, 1.0]


def test_a_missing_and_an_empty_sqlite_file_and_a_good_one_are_told_apart(tmp_path):
    good = make_shop(tmp_path / "good.sqlite")
    empty = tmp_path / "empty.sqlite"
    sqlite3.connect(empty).close()  # a zero-byte file, as a connect to a wrong path leaves
    urls = {
        "good": f"sqlite:///{good}",
        "empty": f"sqlite:///{empty}",
        "gone": f"sqlite:///{tmp_path / 'gone.sqlite'}",
    }
    examples = [
        Example(id=db, question="q?", database=db, gold_sql=["SELECT 1"]) for db in [*urls, "none"]
    ]
    problems = database_problems(examples, urls)
    assert problems == {
        "empty": f"has no tables: {empty}",
        "gone": f"SQLite file not found: {tmp_path / 'gone.sqlite'}",
        "none": "no database URL",
    }
    assert not (tmp_path / "gone.sqlite").exists()  # the check created nothing
    with pytest.raises(MissingDatabaseError) as error:
        require_databases(Dataset("mixed", examples, urls))
    assert error.value.problems == problems
    assert str(error.value).startswith("3 databases of mixed cannot be opened")
    require_databases(Dataset("fine", examples[:1], urls))  # nothing to say: no error


def test_an_example_url_of_its_own_is_checked_beside_the_dataset_map(tmp_path):
    good = make_shop(tmp_path / "good.sqlite")
    own = Example(
        id="a", question="q?", database="shop", gold_sql=["SELECT 1"],
        database_url=f"sqlite:///{tmp_path / 'moved.sqlite'}",
    )  # fmt: skip
    mapped = Example(id="b", question="q?", database="shop", gold_sql=["SELECT 1"])
    problems = database_problems([own, mapped], {"shop": f"sqlite:///{good}"})
    assert problems == {"shop": f"SQLite file not found: {tmp_path / 'moved.sqlite'}"}


def test_the_learn_split_databases_are_needed_too(tmp_path, capsys):
    folder = tmp_path / "data"
    questions = write_questions(folder, splits=("test",))
    learned = write_questions(tmp_path / "other", database="ledger", splits=("train",))
    lines = questions.read_text() + learned.read_text()
    questions.write_text(lines, encoding="utf-8")
    make_shop(folder / "shop.sqlite")
    out = tmp_path / "out"
    argv = ["run", "--dataset", str(questions), "--system", "gold", "--split", "test"]
    assert bench_main([*argv, "--learn-split", "train", "--out", str(out)]) == 2
    assert "ledger: no database URL" in capsys.readouterr().err
    assert not out.exists()
    assert bench_main([*argv, "--out", str(out)]) == 0  # asking alone needs only the shop


def test_distill_eval_refuses_before_either_model_runs(tmp_path):
    questions = write_questions(tmp_path / "data", splits=("train", "test"))
    sample = Sample(dataset=str(questions), split="test", learn_split="train")
    with pytest.raises(EvalError, match=r"shop: no database URL, and no .*shop\.sqlite beside"):
        select_questions(sample)
    make_shop(questions.parent / "shop.sqlite")
    assert select_questions(sample) == ("questions", ["test0", "test1", "test2"])
    assert load_almanac_jsonl(questions).databases == {
        "shop": f"sqlite:///{(questions.parent / 'shop.sqlite').resolve()}"
    }


@pytest.mark.parametrize("module", ["bench.linking", "bench.perf.ask"])
def test_the_linking_and_latency_benchmarks_refuse_the_same_way(module, tmp_path, capsys):
    questions = write_questions(tmp_path / "data")
    with pytest.raises(SystemExit) as stopped:
        importlib.import_module(module).main(["--dataset", str(questions)])
    assert stopped.value.code == 2
    assert f"shop: no database URL, and no {questions.parent / 'shop.sqlite'}" in (
        capsys.readouterr().err
    )
