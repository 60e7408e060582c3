"""Formulas as documents write them, checked against a schema (no database needed: the
column lookup is a dictionary)."""

from __future__ import annotations

import pytest

from agents.learn.documents.formula import (
    CheckedFormula,
    FormulaError,
    check_formula,
    rows_filter,
)
from ukf import ColumnUKF, TableUKF

SCHEMA = {
    "income_a": ["report_item_level1", "ptd_amt_usd"],
    "income_b": ["report_item_level1", "ptd_amt_usd"],
    "sales": ["units", "powertrain"],
}
COLUMNS = {
    (table, column): ColumnUKF.create(TableUKF.create("d", table, columns=columns), column)
    for table, columns in SCHEMA.items()
    for column in columns
}


def _find(table: str, column: str) -> list[ColumnUKF]:
    found = [e for (t, c), e in COLUMNS.items() if c == column and (not table or t == table)]
    if not found:
        raise FormulaError("unknown_column", column)
    return found


def _check(formula: str, metrics: tuple[str, ...] = ()) -> CheckedFormula:
    return check_formula(formula, _find, metrics)


def _names(checked: CheckedFormula) -> list[str]:
    return sorted(
        f"{c.content_resources['table']}.{c.content_resources['column']}" for c in checked.columns
    )


def test_a_placeholder_and_a_filter_after_where():
    checked = _check("SUM(<amount>) WHERE report_item_level1 = 'Revenue'")
    assert checked.placeholders == ["<amount>"]
    assert checked.condition is not None and not checked.is_condition
    # a column without its table counts for every table that has it
    assert _names(checked) == ["income_a.report_item_level1", "income_b.report_item_level1"]


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ("SUM(<amount>) WHERE report_item_level1 = 'Revenue'",
         {"column": "report_item_level1", "value": "Revenue",
          "tables": ["income_a", "income_b"]}),
        ("SUM(units) WHERE ('BEV' = powertrain)",
         {"column": "powertrain", "value": "BEV", "tables": ["sales"]}),
        ("SUM(units) WHERE units = 3", {"column": "units", "value": 3, "tables": ["sales"]}),
        ("SUM(units) WHERE powertrain IN ('BEV', 'PHEV')", None),  # not one value
        ("SUM(units) WHERE powertrain = 'BEV' AND units > 1", None),  # two conditions
        ("SUM(units)", None),
    ],
)  # fmt: skip
def test_a_measure_filtered_by_one_value_carries_that_filter(formula, expected):
    assert rows_filter(_check(formula)) == expected


def test_other_metrics_by_name_but_not_inside_a_quoted_value():
    checked = _check("(Revenue - Cost of sales) / Revenue", ("Revenue", "Cost of sales", "Cost"))
    assert sorted(checked.metrics) == ["Cost of sales", "Revenue"] and checked.columns == []
    quoted = _check("SUM(<amount>) WHERE report_item_level1 = 'Revenue'", ("Revenue",))
    assert quoted.metrics == []
    assert quoted.condition.sql() == "report_item_level1 = 'Revenue'"


def test_a_lone_column_is_a_name_for_it_and_a_lone_metric_no_measure():
    lone = _check("sales.units")
    assert lone.lone_column and _names(lone) == ["sales.units"]
    assert not _check("SUM(sales.units)").lone_column
    with pytest.raises(FormulaError, match="not_a_measure"):
        _check("Revenue", ("Revenue",))


def test_a_condition_alone_is_a_filter_and_a_measure_is_not():
    assert _check("sales.powertrain IN ('BEV', 'PHEV')").is_condition
    assert not _check("SUM(sales.units)").is_condition


@pytest.mark.parametrize(
    ("formula", "reason"),
    [
        ("SUM(sales.price)", "unknown_column"),
        ("Revenue - Cost of sales", "formula_unparsable"),
        ("SELECT SUM(units) FROM sales", "formula_not_expression"),
        ("<amount>", "not_a_measure"),
        ("Revenue", "unknown_column"),
        ("SUM(<amount>) WHERE nowhere = 'x'", "unknown_column"),
    ],
)
def test_what_is_dropped_and_why(formula, reason):
    with pytest.raises(FormulaError) as error:
        _check(formula)
    assert error.value.reason == reason
