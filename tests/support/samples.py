"""One realistic entry of every UKF template, for round-trip and store tests."""

from __future__ import annotations

from datetime import UTC, datetime

from ukf import (
    Auth,
    BaseUKF,
    ColumnUKF,
    DocumentUKF,
    EnumUKF,
    ExperienceUKF,
    ForeignKey,
    KnowledgeUKF,
    MetricUKF,
    PredicateUKF,
    RuleUKF,
    SynonymUKF,
    TableUKF,
    TaxonomyUKF,
)

WHEN = datetime(2025, 3, 4, 5, 6, 7, 123456, tzinfo=UTC)


def every_template(database: str = "autofin") -> list[BaseUKF]:
    """Entries of all eleven templates, related to each other like a real knowledge base."""
    sales = TableUKF.create(
        database,
        "sales_ledger_nova",
        columns=["period", "model", "region", "amt_usd"],
        primary_key=["period", "model"],
        foreign_keys=[ForeignKey(columns=("region",), ref_table="regions", ref_columns=("code",))],
        row_count=40_000,
        comment="Monthly sales of the Nova brand",
        synonyms=["Nova sales", "sales ledger"],
        timestamp=WHEN,
    )
    model = ColumnUKF.create(
        sales, "model", data_type="TEXT", semantic_type="categorical", examples=["NV-200"]
    )
    region = ColumnUKF.create(sales, "region", data_type="TEXT", semantic_type="categorical")
    nv200 = EnumUKF.create(model, "NV-200", count=1200, frequency=0.03, synonyms=["Nova 200"])
    return [
        KnowledgeUKF.create(
            "BCR", "Budget completion rate", database=database, synonyms=["budget completion"]
        ),
        DocumentUKF.create(
            "Finance handbook",
            "# Fiscal calendar\nThe fiscal year starts in January.",
            uri="file:///docs/handbook.md",
            chunk=0,
        ),
        ExperienceUKF.create(
            "Nova revenue last month?",
            "SELECT SUM(amt_usd) FROM sales_ledger_nova WHERE period = '202502'",
            database=database,
            dialect="sqlite",
            context={"query_time": WHEN, "user_profile": {"region": "EU", "currency": "EUR"}},
            result_schema=[{"name": "revenue", "type": "REAL"}],
            cot="Last month relative to 2025-03-04 is 202502.",
            labeled=True,
        ),
        sales,
        model,
        region,
        nv200,
        TaxonomyUKF.create("region hierarchy", [region], database=database),
        PredicateUKF.create("Nova 200 sales", "model = 'NV-200'", database=database, enums=[nv200]),
        SynonymUKF.create("Nova flagship", nv200, database=database),
        MetricUKF.create(
            "gross margin",
            "(revenue - cogs) / revenue",
            kind="metric",
            unit="%",
            database=database,
            columns=[model],
        ),
        RuleUKF.create(
            "data refresh",
            "Data is refreshed on the 10th: before it, 'this month' means the previous month.",
            kind="temporal",
            database=database,
            triggers={"query_time_window": {"day_of_month_to": 9}},
            auths=[Auth(user="finance", authority="read")],
            last_verified=WHEN,
            expiration=datetime(2030, 1, 1, tzinfo=UTC),
            metadata={"origin": "wiki"},
            profile={"hits": 3},
            notes="confirmed by controlling",
        ),
    ]
