"""Which column of a result is its time, its category and its measure: a number named like a
duration or an aggregate is a measure, not a time axis."""

from __future__ import annotations

import pytest

from agents.analysis.charts import roles


@pytest.mark.parametrize(
    ("columns", "rows", "expected"),
    [
        # InsightBench flag-43: an average of hours named *_time is the measure
        (
            ["department", "total_spent", "avg_processing_time"],
            [["Support", 1600685, 2076.27], ["Finance", 1259368, 1631.9]],
            (None, "department", "avg_processing_time"),
        ),
        # flag-22: AVG() of a date column is a number, not a date
        (
            ["category", "average_amount", "average_processed_date"],
            [["Assets", 5128.4, 2023.317], ["Travel", 4374.1, 2023.2]],
            (None, "category", "average_processed_date"),
        ),
        # a duration in whole numbers
        (["processing_time", "amount"], [[11.0, 568.9], [17.0, 612.6]], (None, None, "amount")),
        (["year", "revenue"], [[2022, 10.5], [2023, 12.0]], ("year", None, "revenue")),
        (["month", "orders"], [[1, 40], [2, 42], [3, 45]], ("month", None, "orders")),
        (
            ["closed_at", "n"],
            [["2024-01-02 10:00:00", 1], ["2024-01-03 11:00:00", 2]],
            ("closed_at", None, "n"),
        ),
        (
            ["sale_date", "region", "units"],
            [["Q1", "EU", 3], ["Q2", "EU", 4]],
            ("sale_date", "region", "units"),
        ),
        (["max_date", "n"], [["2024-01-02", 1], ["2024-02-02", 2]], ("max_date", None, "n")),
    ],
)
def test_roles_of_a_result(columns, rows, expected):
    found = roles(columns, rows)
    assert (found["time"], found["category"], found["measure"]) == expected


def test_a_result_that_repeats_a_column_name_still_gets_its_roles():
    found = roles(["region", "revenue", "revenue"], [["EU", 1.0, 2.0], ["US", 3.0, 4.0]])
    assert found == {"time": None, "category": "region", "measure": "revenue"}
