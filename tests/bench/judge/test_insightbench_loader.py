"""The InsightBench loader on real tasks, and on broken files."""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path

import pytest

from bench.datasets.dataset import DatasetFormatError
from bench.datasets.insightbench import load_insightbench, load_task, table_name
from bench.datasets.registry import default_data_root

ROOT = default_data_root() / "insightbench"
needs_data = pytest.mark.skipif(not ROOT.is_dir(), reason="no InsightBench data")


def csv_rows(path: Path) -> int:
    with path.open(newline="", encoding="utf-8") as handle:
        return sum(1 for _ in csv.reader(handle)) - 1


def count(database: Path, table: str) -> int:
    connection = sqlite3.connect(database)
    try:
        return connection.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0]
    finally:
        connection.close()


@needs_data
def test_two_real_tasks_become_sqlite_tables(tmp_path: Path) -> None:
    one = load_task(ROOT / "flag-1.json", tmp_path)
    fourteen = load_task(ROOT / "flag-14.json", tmp_path)

    assert one.id == "flag-1" and one.tables == ("flag_1",)
    assert count(one.database_path, "flag_1") == csv_rows(ROOT / "csvs" / "flag-1.csv") == 500
    assert fourteen.tables == ("flag_14", "flag_14_sysuser")
    for table, stem in zip(fourteen.tables, ("flag-14", "flag-14-sysuser"), strict=True):
        assert count(fourteen.database_path, table) == csv_rows(ROOT / "csvs" / f"{stem}.csv")
    # dates stay ISO text
    connection = sqlite3.connect(one.database_path)
    opened = connection.execute("SELECT opened_at, typeof(opened_at) FROM flag_1").fetchone()
    connection.close()
    assert opened == ("2023-01-02 11:04:00", "text")

    assert one.goal and one.role and one.category and one.summary.startswith("1.")
    assert one.insights[0].text == "hardware incidents is significantly higher than others"
    assert one.insights[0].type == "descriptive"
    assert one.insights[0].question == (
        "What is the distribution of incidents across all categories?"
    )
    assert [i.type for i in fourteen.insights] == ["descriptive"] * 3 + ["diagnostic"] * 2 + [
        "predictive"
    ]
    assert fourteen.insights[-1].question is None


@needs_data
def test_quoted_literal_fields_are_unquoted_and_empty_insights_dropped(tmp_path: Path) -> None:
    task = load_task(ROOT / "flag-34.json", tmp_path)

    assert len(task.insights) == 3  # the fourth is empty
    assert task.insights[1].type == "diagnostic"  # written "'diagnostic'" in the file
    assert task.insights[1].text.startswith("There is a dominance of 'Cost Reduction'")


def _task_folder(tmp_path: Path, task: dict) -> Path:
    root = tmp_path / "ib"
    (root / "csvs").mkdir(parents=True)
    (root / "csvs" / "flag-7.csv").write_text("day,sales\n2024-01-01,3\n2024-01-02,4.5\n")
    (root / "flag-7.json").write_text(json.dumps(task))
    return root


def test_python_literal_strings_are_parsed(tmp_path: Path) -> None:
    metadata = {"goal": "Find why sales moved", "role": "Analyst", "category": "Sales"}
    insights = [{"data_type": "Predictive", "insight": "Sales keep rising", "question": "Q?"}]
    root = _task_folder(
        tmp_path,
        {
            "dataset_csv_path": "data/notebooks/csvs/flag-7.csv",
            "user_dataset_csv_path": None,
            "metadata": repr(metadata),
            "insight_list": repr(insights),
            "summary": "Sales rise.",
        },
    )

    [task] = load_insightbench(root, cache_dir=tmp_path / "cache")

    assert task.goal == "Find why sales moved" and task.role == "Analyst"
    assert [(i.text, i.type, i.question) for i in task.insights] == [
        ("Sales keep rising", "predictive", "Q?")
    ]
    connection = sqlite3.connect(task.database_path)
    rows = connection.execute("SELECT day, typeof(day), sales FROM flag_7 ORDER BY day").fetchall()
    connection.close()
    assert rows == [("2024-01-01", "text", 3.0), ("2024-01-02", "text", 4.5)]


def test_bad_json_file_is_refused_with_its_name(tmp_path: Path) -> None:
    root = tmp_path / "ib"
    root.mkdir()
    (root / "flag-3.json").write_text('{"metadata": ')

    with pytest.raises(DatasetFormatError, match=r"flag-3\.json.*invalid JSON"):
        load_insightbench(root, cache_dir=tmp_path / "cache")


def test_code_in_a_literal_is_refused_not_run(tmp_path: Path) -> None:
    root = _task_folder(
        tmp_path,
        {
            "dataset_csv_path": "data/notebooks/csvs/flag-7.csv",
            "metadata": "__import__('os').system('touch pwned')",
            "insight_list": "[]",
            "summary": "",
        },
    )

    with pytest.raises(DatasetFormatError, match=r"flag-7\.json: field 'metadata'"):
        load_insightbench(root, cache_dir=tmp_path / "cache")
    assert not Path("pwned").exists()


def test_missing_csv_is_named(tmp_path: Path) -> None:
    root = _task_folder(
        tmp_path,
        {
            "dataset_csv_path": "data/notebooks/csvs/flag-99.csv",
            "metadata": {"goal": "g"},
            "insight_list": [{"insight": "x"}],
            "summary": "s",
        },
    )

    with pytest.raises(DatasetFormatError, match=r"flag-7\.json.*flag-99\.csv"):
        load_insightbench(root, cache_dir=tmp_path / "cache")


def test_table_names_are_sanitised() -> None:
    assert table_name(Path("flag-14-sysuser.csv")) == "flag_14_sysuser"
    assert table_name(Path("2024 sales.csv")) == "t_2024_sales"


def test_empty_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"flag-N\.json"):
        load_insightbench(tmp_path, cache_dir=tmp_path / "cache")


@needs_data
def test_cached_database_is_reused(tmp_path: Path) -> None:
    first = load_task(ROOT / "flag-1.json", tmp_path)
    stamp = first.database_path.stat().st_mtime_ns

    again = load_task(ROOT / "flag-1.json", tmp_path)

    assert again.database_path.stat().st_mtime_ns == stamp
