"""A starter knowledge pack for the demo: a car maker's finance vocabulary, rules and metrics.

It exercises every UKF template; the generated AutoFin database replaces it as the demo's
subject once the benchmark issue lands.
"""

from __future__ import annotations

from datetime import UTC, datetime

from ukf import (
    Auth,
    BaseUKF,
    ColumnUKF,
    DocumentUKF,
    EnumUKF,
    ExperienceUKF,
    KnowledgeUKF,
    MetricUKF,
    PredicateUKF,
    RuleUKF,
    SynonymUKF,
    TableUKF,
    TaxonomyUKF,
)

DATABASE = "autofin"
PACK_TIME = datetime(2025, 1, 1, tzinfo=UTC)


def starter_pack() -> list[BaseUKF]:
    """Schema, semantics and one labeled question for the ``income_nova`` table."""
    common = {"timestamp": PACK_TIME}
    income = TableUKF.create(
        DATABASE, "income_nova", columns=["period", "model", "region", "ptd_amt_usd"],
        primary_key=["period", "model", "region"], comment="Monthly income of the Nova brand",
        synonyms=["Nova income", "Nova P&L"], **common,
    )
    model = ColumnUKF.create(income, "model", data_type="TEXT", semantic_type="categorical",
                             comment="Vehicle model", **common)
    region = ColumnUKF.create(income, "region", data_type="TEXT", semantic_type="categorical",
                              comment="Sales region", **common)
    period = ColumnUKF.create(income, "period", data_type="TEXT", semantic_type="temporal",
                              comment="Month as YYYYMM", **common)
    amount = ColumnUKF.create(income, "ptd_amt_usd", data_type="REAL", semantic_type="numeric",
                              comment="Period-to-date amount in USD", **common)
    nv200 = EnumUKF.create(model, "NV-200", count=1200, synonyms=["Nova 200"], **common)
    emea = EnumUKF.create(region, "EMEA", count=800, synonyms=["Europe"], **common)
    return [
        income, model, region, period, amount, nv200, emea,
        TaxonomyUKF.create("sales geography", [region], database=DATABASE, **common),
        PredicateUKF.create("European sales", "region = 'EMEA'", database=DATABASE,
                            enums=[emea], **common),
        SynonymUKF.create("Nova flagship", nv200, database=DATABASE, **common),
        MetricUKF.create("YoY growth", "(ptd_amt - ptd_amt_py) / ptd_amt_py", kind="metric",
                         unit="%", database=DATABASE, columns=[amount], **common),
        KnowledgeUKF.create("BCR", "Budget completion rate = actual / budget.",
                            database=DATABASE, synonyms=["budget completion"], **common),
        RuleUKF.create(
            "data refresh", "Data is refreshed on the 10th: before it, 'this month' means the "
            "previous month.", kind="temporal", database=DATABASE,
            triggers={"query_time_window": {"day_of_month_to": 9}}, **common,
        ),
        RuleUKF.create("headquarters", "Exclude region 'HQ' from regional rankings.",
                       kind="validity", database=DATABASE, auths=[Auth(user="finance")],
                       **common),
        DocumentUKF.create("fiscal calendar", "The fiscal year runs January to December.",
                           uri="almanac://demo/fiscal-calendar.md", **common),
        ExperienceUKF.create(
            "Nova revenue last month?",
            "SELECT SUM(ptd_amt_usd) FROM income_nova WHERE period = '202412'",
            database=DATABASE, dialect="sqlite", labeled=True, verified=True,
            context={"query_time": datetime(2025, 1, 15, tzinfo=UTC),
                     "user_profile": {"role": "executive", "region": "EMEA"}},
            cot="Last month relative to 2025-01-15 is 202412.", **common,
        ),
    ]
