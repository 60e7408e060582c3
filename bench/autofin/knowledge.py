"""The AutoFin knowledge pack as UKF entries: business knowledge only, no schema entries.

Documents (one per Markdown file), glossary terms (Knowledge), metrics, rules (with triggers),
predicates, taxonomies and synonyms (model nicknames, brand, region, customer-group and caliber
aliases). Taxonomy levels and synonym targets point at the ids that profiling the AutoFin
database with default provenance gives its columns and values (``[DATABASE:autofin]``), so the
graph links up once the schema is in the store; those schema entries are not part of the pack.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bench.autofin.catalog import (
    BRANDS,
    CUSTOMER_GROUPS,
    DATABASE,
    MODELS,
    REGIONS,
    brand,
)
from bench.autofin.docs import documents
from bench.autofin.glossary import METRICS, PREDICATES, TERMS
from bench.autofin.rules import rules
from ukf import (
    Auth,
    BaseUKF,
    ColumnUKF,
    DocumentUKF,
    EnumUKF,
    KnowledgeUKF,
    MetricUKF,
    PredicateUKF,
    RuleUKF,
    SynonymUKF,
    TableUKF,
    TaxonomyUKF,
)

PACK_TIME = datetime(2025, 1, 1, tzinfo=UTC)
PACK_TAG = "[PACK:autofin]"
URI_PREFIX = "almanac://autofin/knowledge/"
CALIBER_ALIASES = {
    "A": ("management caliber", "management view", "caliber A"),
    "B": ("statutory caliber", "financial reporting view", "caliber B"),
}


def _common() -> dict[str, Any]:
    return {"timestamp": PACK_TIME, "source": "user", "creator": "autofin", "tags": [PACK_TAG]}


def column_ref(table: str, column: str) -> ColumnUKF:
    """The column entry profiling would create (not part of the pack; used for its id)."""
    parent = TableUKF.create(DATABASE, table, timestamp=PACK_TIME)
    return ColumnUKF.create(parent, column, timestamp=PACK_TIME)


def enum_ref(table: str, column: str, value: str) -> EnumUKF:
    """The enum entry profiling would create for one value (not part of the pack)."""
    return EnumUKF.create(column_ref(table, column), value, timestamp=PACK_TIME)


def knowledge_pack() -> list[BaseUKF]:
    """Every entry of the pack, in a fixed order."""
    return [
        *_documents(),
        *_terms(),
        *_metrics(),
        *_rules(),
        *_predicates(),
        *_taxonomies(),
        *_synonyms(),
    ]


def _documents() -> list[BaseUKF]:
    return [
        DocumentUKF.create(
            text.splitlines()[0].lstrip("# "),
            text,
            uri=URI_PREFIX + name,
            database=DATABASE,
            **_common(),
        )
        for name, text in documents().items()
    ]


def _terms() -> list[BaseUKF]:
    entries: list[BaseUKF] = [
        KnowledgeUKF.create(
            term.name,
            f"{term.name} ({term.expansion}): {term.definition}",
            database=DATABASE,
            short_description=term.expansion,
            synonyms=[term.expansion, *term.synonyms],
            collection="glossary",
            **_common(),
        )
        for term in TERMS
    ]
    entries.append(
        KnowledgeUKF.create(
            "Caliber B allocation keys",
            "Caliber B allocates headquarters' administrative and R&D costs to brands by "
            "revenue share; the keys are reviewed at each quarterly close.",
            database=DATABASE,
            auths=[Auth(user="controllers")],
            collection="glossary",
            **_common(),
        )
    )
    return entries


def _metrics() -> list[BaseUKF]:
    return [
        MetricUKF.create(
            metric.name,
            metric.formula,
            kind=metric.kind,  # type: ignore[arg-type]
            unit=metric.unit,
            database=DATABASE,
            description=metric.description,
            synonyms=list(metric.synonyms),
            content_resources={
                "columns": list(metric.columns),
                **({"default_filter": metric.rows_filter} if metric.rows_filter else {}),
            },
            **_common(),
        )
        for metric in METRICS
    ]


def _rules() -> list[BaseUKF]:
    return [
        RuleUKF.create(
            rule.name,
            rule.content,
            kind=rule.kind,  # type: ignore[arg-type]
            database=DATABASE,
            triggers=rule.triggers,
            synonyms=list(rule.synonyms),
            content_resources=dict(rule.resources),
            **_common(),
        )
        for rule in rules()
    ]


def _predicates() -> list[BaseUKF]:
    return [
        PredicateUKF.create(
            predicate.name,
            predicate.condition,
            database=DATABASE,
            description=predicate.description,
            synonyms=list(predicate.synonyms),
            content_resources={"columns": list(predicate.columns)},
            **_common(),
        )
        for predicate in PREDICATES
    ]


def _taxonomies() -> list[BaseUKF]:
    hierarchies = {
        "Region hierarchy": ("regions", ("region_code", "country_code", "area_code")),
        "Customer hierarchy": ("customers", ("customer_group_code", "customer_code")),
        "Product hierarchy": ("vehicle_models", ("dept_code", "segment", "model_code")),
        "Report item hierarchy": ("report_items", ("report_item_level1", "report_item_code")),
        "Fiscal period hierarchy": ("fiscal_calendar", ("fiscal_year", "fiscal_quarter", "period")),
    }
    return [
        TaxonomyUKF.create(
            name,
            [column_ref(table, column) for column in columns],
            database=DATABASE,
            description=f"{' > '.join(columns)}; the same columns appear in the fact tables.",
            **_common(),
        )
        for name, (table, columns) in hierarchies.items()
    ]


def _synonym(phrase: str, table: str, column: str, value: str) -> SynonymUKF:
    target = enum_ref(table, column, value)
    return SynonymUKF.create(
        phrase,
        target,
        target_name=f"{column} = '{value}'",
        database=DATABASE,
        content_resources={"table": table, "column": column, "value": value},
        **_common(),
    )


def _synonyms() -> list[BaseUKF]:
    entries = []
    for m in MODELS:
        owner = brand(m.brand).name
        for phrase in (m.nickname, f"{owner} {m.nickname}", m.name):
            entries.append(_synonym(phrase, "vehicle_models", "model_code", m.code))
    for b in BRANDS:
        for phrase in b.aliases:
            entries.append(_synonym(phrase, "departments", "dept_code", b.code))
    for r in REGIONS:
        for phrase in (r.name, *r.aliases):
            entries.append(_synonym(phrase, "regions", "region_code", r.code))
    for g in CUSTOMER_GROUPS:
        for phrase in g.aliases:
            entries.append(_synonym(phrase, "customers", "customer_group_code", g.code))
    for caliber, phrases in CALIBER_ALIASES.items():
        for phrase in phrases:
            entries.append(_synonym(phrase, "profit_and_loss", "caliber", caliber))
    names = [e.name.casefold() for e in entries]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"ambiguous synonym phrases: {duplicates}")
    return entries
