"""Table layouts of the AutoFin database and their DDL for SQLite and PostgreSQL.

Per brand: ``income_<brand>`` (wide: 71 columns, one row per period, caliber, sales line and
report item) and ``sales_ledger_<brand>`` (one row per invoice). Shared: ``profit_and_loss`` and
``budget_and_forecast`` (narrow, with a ``currency`` column), plus dimension tables.

Wide tables carry one column per currency (``ytd_amt_eur``); amount columns are named
``<ptd|qtd|ytd>_amt[_py]_<currency>``: period-, quarter- and year-to-date, ``_py`` for the same
period of the prior year, ``lc`` for the row's local currency.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.autofin.catalog import BRANDS, REPORTING_CURRENCIES

TYPES = {
    "sqlite": {"text": "TEXT", "int": "INTEGER", "real": "REAL"},
    "postgresql": {"text": "TEXT", "int": "INTEGER", "real": "DOUBLE PRECISION"},
}


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # text | int | real


@dataclass(frozen=True)
class TableSpec:
    name: str
    columns: tuple[Column, ...]
    indexes: tuple[tuple[str, ...], ...] = ()

    @property
    def column_names(self) -> list[str]:
        return [column.name for column in self.columns]


def amount_column(kind: str, currency: str, *, prior_year: bool = False) -> str:
    """``amount_column('ytd', 'EUR', prior_year=True) == 'ytd_amt_py_eur'``."""
    return f"{kind}_amt{'_py' if prior_year else ''}_{currency.lower()}"


def _cols(kind: str, *names: str) -> list[Column]:
    return [Column(name, kind) for name in names]


PERIOD_COLUMNS = _cols("text", "period", "fiscal_year", "fiscal_quarter")
GEO_COLUMNS = _cols(
    "text", "region_code", "region_name", "country_code", "country_name", "area_code", "area_name"
)
CUSTOMER_COLUMNS = _cols(
    "text",
    "customer_group_code",
    "customer_group_name",
    "customer_code",
    "customer_name",
    "channel",
)
MODEL_COLUMNS = _cols("text", "model_code", "model_name", "segment", "powertrain")
ITEM_COLUMNS = _cols("text", "report_item_code", "report_item_name", "report_item_level1")


def income_amount_columns() -> list[str]:
    """The amount columns of an income table, in table order."""
    names = []
    for currency in REPORTING_CURRENCIES:
        for kind in ("ptd", "qtd", "ytd"):
            names += [amount_column(kind, currency), amount_column(kind, currency, prior_year=True)]
    for kind in ("ptd", "ytd"):
        names += [amount_column(kind, "lc"), amount_column(kind, "lc", prior_year=True)]
    return names


QUANTITY_COLUMNS = ("ptd_qty", "ptd_qty_py", "qtd_qty", "qtd_qty_py", "ytd_qty", "ytd_qty_py")


def income_spec(table: str) -> TableSpec:
    columns = [
        *PERIOD_COLUMNS,
        Column("fiscal_month", "int"),
        Column("caliber", "text"),
        *_cols("text", "dept_code", "dept_name"),
        *GEO_COLUMNS,
        *CUSTOMER_COLUMNS,
        *MODEL_COLUMNS,
        *ITEM_COLUMNS,
        *_cols("text", "entity_code", "entity_name", "profit_center", "data_source"),
        Column("is_intercompany", "int"),
        Column("local_currency", "text"),
        *_cols("real", *income_amount_columns()),
        *_cols("int", *QUANTITY_COLUMNS),
    ]
    return TableSpec(table, tuple(columns), (("period", "caliber"),))


def ledger_money_columns() -> list[str]:
    return [
        f"{measure}_{currency.lower()}"
        for measure in ("gross_sales", "discount", "net_sales")
        for currency in REPORTING_CURRENCIES
    ]


def ledger_spec(table: str) -> TableSpec:
    columns = [
        *_cols("text", "invoice_no", "invoice_date"),
        *PERIOD_COLUMNS,
        Column("dept_code", "text"),
        *GEO_COLUMNS,
        *CUSTOMER_COLUMNS,
        *MODEL_COLUMNS,
        Column("units", "int"),
        Column("list_price_usd", "real"),
        *_cols("real", *ledger_money_columns()),
        Column("local_currency", "text"),
        Column("net_sales_lc", "real"),
        Column("payment_terms", "text"),
        Column("is_intercompany", "int"),
    ]
    return TableSpec(table, tuple(columns), (("period",),))


PNL = TableSpec(
    "profit_and_loss",
    (
        *PERIOD_COLUMNS,
        *_cols("text", "caliber", "dept_code", "dept_name", "region_code", "region_name"),
        *ITEM_COLUMNS,
        Column("currency", "text"),
        *_cols("real", "ptd_amt", "ptd_amt_py", "ytd_amt", "ytd_amt_py"),
    ),
    (("period", "currency"),),
)

BUDGET = TableSpec(
    "budget_and_forecast",
    (
        *PERIOD_COLUMNS,
        *_cols("text", "scenario", "dept_code", "dept_name", "region_code", "region_name"),
        *_cols("text", "report_item_level1", "currency"),
        *_cols("real", "ptd_amt", "ytd_amt"),
    ),
    (("period", "currency"),),
)

DIMENSIONS = (
    TableSpec(
        "departments",
        tuple(_cols("text", "dept_code", "dept_name", "focus", "income_table", "ledger_table")),
    ),
    TableSpec(
        "regions",
        (
            *_cols("text", "area_code", "area_name", "city", "country_code", "country_name"),
            *_cols("text", "local_currency", "region_code", "region_name", "default_currency"),
        ),
    ),
    TableSpec(
        "customers",
        tuple(
            _cols(
                "text",
                "customer_code",
                "customer_name",
                "customer_group_code",
                "customer_group_name",
                "customer_type",
                "country_code",
                "area_code",
            )
        ),
    ),
    TableSpec(
        "vehicle_models",
        (
            *_cols("text", "model_code", "model_name", "dept_code", "segment", "powertrain"),
            Column("list_price_usd", "real"),
        ),
    ),
    TableSpec(
        "report_items",
        (
            *_cols("text", "report_item_code", "report_item_name", "report_item_level1"),
            Column("display_order", "int"),
        ),
    ),
    TableSpec(
        "fx_rates",
        (*_cols("text", "period", "currency"), *_cols("real", "rate_per_usd", "budget_rate")),
    ),
    TableSpec(
        "fiscal_calendar",
        (
            *PERIOD_COLUMNS,
            *_cols("int", "calendar_year", "calendar_month", "fiscal_month"),
        ),
    ),
)


def all_specs() -> list[TableSpec]:
    """Every table, in creation order."""
    specs = [*DIMENSIONS]
    for brand in BRANDS:
        specs += [income_spec(brand.income_table), ledger_spec(brand.ledger_table)]
    return [*specs, PNL, BUDGET]


def create_table_sql(spec: TableSpec, dialect: str) -> str:
    types = TYPES[dialect]
    body = ",\n  ".join(f"{c.name} {types[c.type]}" for c in spec.columns)
    return f"CREATE TABLE {spec.name} (\n  {body}\n)"


def create_index_sql(spec: TableSpec) -> list[str]:
    return [
        f"CREATE INDEX ix_{spec.name}_{'_'.join(cols)} ON {spec.name} ({', '.join(cols)})"
        for cols in spec.indexes
    ]


@dataclass
class Table:
    """A table's rows, stored column by column (plain Python values, aligned with the spec)."""

    spec: TableSpec
    columns: list[list]

    def __post_init__(self) -> None:
        if len(self.columns) != len(self.spec.columns):
            raise ValueError(
                f"{self.spec.name}: {len(self.columns)} columns for "
                f"{len(self.spec.columns)} in the spec"
            )
        lengths = {len(values) for values in self.columns}
        if len(lengths) > 1:
            raise ValueError(f"{self.spec.name}: columns of different lengths {sorted(lengths)}")

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def row_count(self) -> int:
        return len(self.columns[0]) if self.columns else 0

    @classmethod
    def from_mapping(cls, spec: TableSpec, values: dict[str, list]) -> Table:
        """Columns given by name; every column of the spec must be present."""
        missing = [name for name in spec.column_names if name not in values]
        if missing:
            raise ValueError(f"{spec.name}: no values for {missing}")
        return cls(spec, [values[name] for name in spec.column_names])

    @classmethod
    def from_rows(cls, spec: TableSpec, rows: list[tuple]) -> Table:
        columns = [list(values) for values in zip(*rows, strict=True)] if rows else None
        return cls(spec, columns or [[] for _ in spec.columns])
