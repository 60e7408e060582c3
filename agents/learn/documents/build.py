"""A section's extracted items → UKF entries, each checked against the profiled schema.

What each kind of item becomes (the UKF types mining uses, :mod:`agents.learn.mine.entries`):

- **term** naming a column or a table: a :class:`ukf.SynonymUKF` for the term and one for each
  alias, → that element; naming none: a glossary :class:`ukf.KnowledgeUKF` (its meaning as the
  content, its aliases as synonyms), as the hand-written AutoFin pack has them;
- **metric**: a :class:`ukf.MetricUKF` (aliases as synonyms), its formula parsed by sqlglot and
  every column it names found in the schema (``uses_column`` relations), in the notation
  documents use (placeholders, a filter after WHERE, other metrics by name:
  :mod:`agents.learn.documents.formula`); a "formula" that is a
  condition (``Country = 'Netherlands'``, ``a IN (...)``) is a named filter: a
  :class:`ukf.PredicateUKF`, its compared values checked as a value mapping's are;
- **rule**: a :class:`ukf.RuleUKF` with triggers: a time ("before the 10th", "in December")
  → ``query_time_window`` (kind ``temporal``); a role or a region → ``user_profile_match``;
- **value mapping**: a phrase → a stored value: a synonym of the value's Enum entry when the
  value is in the enum catalog, else a :class:`ukf.PredicateUKF` ``table.column = 'value'``
  when the target holds it (or cannot be asked: then *unchecked*, and counted);
- **taxonomy**: a :class:`ukf.TaxonomyUKF` over two or more existing columns.

Items that fail a check are dropped and counted by reason (``unknown_column``,
``formula_unparsable``, ``value_not_found``...); a term or alias that is the name of another
table or column (a small model's "singer" → ``singer.Song_release_year``) is dropped as
``names_other_element``; an item naming the prompt's fictional example table (the model
copied the example) as ``copied_example``. Every entry is a candidate (``source="auto"``,
inactive, ``metadata["mining"]`` with ``miner="documents"``), its parent the document's entry,
and its provenance in ``metadata["document"]``: path, content hash and section locator.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, get_args

from sqlglot import expressions as exp

from agents.learn.documents.formula import FormulaError, check_formula, rows_filter
from agents.learn.documents.item_checks import (
    Drop,
    check_literals,
    element_names,
    fold,
    formula_columns,
    schema_column,
    text_of,
    words_of,
)
from agents.learn.documents.rule_triggers import time_window
from agents.learn.mine.candidates import CANDIDATE
from agents.learn.mine.entries import MINED_COLLECTION, phrase_name, qualified
from agents.learn.mine.schema_view import SchemaView
from kb.documents import Document
from ukf import (
    MINING_KEY,
    BaseUKF,
    KnowledgeUKF,
    MetricUKF,
    PredicateUKF,
    RuleUKF,
    SynonymUKF,
    TaxonomyUKF,
)
from ukf.types.semantics import RuleKind

MINER = "documents"
MINER_VERSION = 1
DOCUMENT = "document"
GLOSSARY_COLLECTION = "glossary"
EXAMPLE_TABLE = "example_orders"  # the prompt's fictional example (prompts/extract_system.j2)


@dataclass(frozen=True)
class Origin:
    """Where the entries of one section come from."""

    job_id: str
    database: str
    document: Document
    document_id: str
    locator: str
    table: int | None = None
    """The table's number in the section and the row's in the table (the table pass)."""
    row: int | None = None

    def fields(self, how: str) -> dict[str, Any]:
        """Constructor fields every extracted entry shares."""
        mining = {
            "status": CANDIDATE,
            "job_id": self.job_id,
            "miner": MINER,
            "miner_version": MINER_VERSION,
            "trust": DOCUMENT,
            "how": how,
        }
        document: dict[str, Any] = {
            "path": self.document.path,
            "name": self.document.name,
            "sha256": self.document.sha256,
            "locator": self.locator,
        }
        if self.row is not None:
            document |= {"table": self.table, "row": self.row}
        return {
            "source": "auto",
            "parents": [self.document_id],
            "inactive_mark": True,
            "metadata": {MINING_KEY: mining, DOCUMENT: document},
        }


@dataclass
class Built:
    entries: list[BaseUKF] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)
    unchecked_values: int = 0


def build_entries(
    items: dict[str, list[dict[str, Any]]],
    view: SchemaView,
    origin: Origin,
    metric_names: Collection[str] = (),
) -> Built:
    """The checked entries of one section's ``items`` (see the module docstring);
    ``metric_names``: metrics a formula may name (the document's and the knowledge base's)."""
    built = Built()
    builders: dict[str, Callable[[dict[str, Any], SchemaView, Origin, Built], None]] = {
        "terms": _term,
        "metrics": partial(_metric, metric_names=metric_names),
        "rules": _rule,
        "value_mappings": _value,
        "taxonomies": _taxonomy,
    }
    for kind, builder in builders.items():
        for item in items.get(kind, []):
            try:
                if EXAMPLE_TABLE in json.dumps(item).casefold():
                    raise Drop("copied_example")
                builder(item, view, origin, built)
            except Drop as drop:
                built.dropped[drop.reason] += 1
    return built


def _term(item: dict[str, Any], view: SchemaView, origin: Origin, built: Built) -> None:
    term, table, column = text_of(item, "term"), text_of(item, "table"), text_of(item, "column")
    if not term:
        raise Drop("empty")
    aliases = [a for a in words_of(item, "aliases") if a.casefold() != term.casefold()]
    target: BaseUKF | None
    if column:
        target = schema_column(view, table, column)
    elif table:
        target = view.table(table)
        if target is None:
            raise Drop("unknown_table")
    else:
        meaning = text_of(item, "meaning")
        if not meaning:
            raise Drop("no_meaning")
        built.entries.append(
            KnowledgeUKF.create(
                term,
                f"{term}: {meaning}",
                database=origin.database,
                synonyms=aliases,
                collection=GLOSSARY_COLLECTION,
                content_resources={"kind": "glossary"},
                **origin.fields("term"),
            )
        )
        return
    label = qualified(target)
    others = element_names(view) - {fold(target.name)}
    phrases = [p for p in (term, *aliases) if fold(p) not in {fold(target.name), fold(label)}]
    if not phrases:
        raise Drop("repeats_name")
    clashing = [p for p in phrases if fold(p) in others]
    if clashing:
        built.dropped["names_other_element"] += len(clashing)
    phrases = [p for p in phrases if p not in clashing]
    for phrase in phrases:
        built.entries.append(
            SynonymUKF.create(
                phrase_name(phrase),
                target,
                target_name=label,
                database=origin.database,
                collection=MINED_COLLECTION,
                description=text_of(item, "meaning"),
                **origin.fields("term"),
            )
        )


def _metric(
    item: dict[str, Any],
    view: SchemaView,
    origin: Origin,
    built: Built,
    metric_names: Collection[str] = (),
) -> None:
    name, formula = text_of(item, "name"), text_of(item, "formula")
    if not name or not formula:
        raise Drop("empty")
    others = [n for n in metric_names if n.casefold() != name.casefold()]
    try:
        checked = check_formula(formula, lambda t, c: formula_columns(view, t, c), others)
        if checked.condition is not None:
            check_literals(checked.condition, view)
    except FormulaError as error:
        raise Drop(error.reason) from None
    if checked.lone_column:  # a name for one column: a synonym of it, as a term's is
        if len(checked.columns) != 1:
            raise Drop("not_a_measure")
        where = checked.columns[0].content_resources
        term = {
            "term": name,
            "aliases": words_of(item, "aliases"),
            "meaning": item.get("description"),
        }
        _term(
            {**term, "table": where.get("table"), "column": where.get("column")},
            view,
            origin,
            built,
        )
        return
    kind: type[PredicateUKF] | type[MetricUKF] = MetricUKF
    if checked.is_condition:  # a filter, not a measure
        check_literals(checked.expression, view)
        kind = PredicateUKF
    resources: dict[str, Any] = {"columns": [qualified(c) for c in checked.columns]}
    if checked.placeholders:
        resources["placeholders"] = checked.placeholders
    if checked.metrics:
        resources["metrics"] = checked.metrics
    if kind is MetricUKF and (default := rows_filter(checked)) is not None:
        resources["default_filter"] = default  # applied when a question names the metric
    built.entries.append(
        kind.create(
            name,
            formula,
            database=origin.database,
            columns=checked.columns,
            description=text_of(item, "description"),
            synonyms=[a for a in words_of(item, "aliases") if a.casefold() != name.casefold()],
            content_resources=resources,
            **origin.fields("metric"),
        )
    )


def metric_names(sections: Iterable[dict[str, list[dict[str, Any]]]]) -> set[str]:
    """The names and aliases of the metrics a document's sections define."""
    names: set[str] = set()
    for items in sections:
        for item in items.get("metrics", []):
            if isinstance(item, dict):
                names.update(n for n in [text_of(item, "name"), *words_of(item, "aliases")] if n)
    return names


def _rule(item: dict[str, Any], view: SchemaView, origin: Origin, built: Built) -> None:
    name, rule = text_of(item, "name"), text_of(item, "rule")
    if not name or not rule:
        raise Drop("empty")
    when = {k: text_of(item, k) for k in ("time", "role", "region") if text_of(item, k)}
    triggers: dict[str, dict[str, Any]] = {}
    window = time_window(when.get("time", ""))
    if window:
        triggers["query_time_window"] = window
    profile: dict[str, Any] = {k: when[k] for k in ("role", "region") if k in when}
    stated = item.get("profile")  # the structured pass's checked profile fields
    if isinstance(stated, dict):
        profile |= {str(k): str(v) for k, v in stated.items()}
    if profile:
        triggers["user_profile_match"] = profile
    kind = item.get("kind")
    if kind not in get_args(RuleKind):  # the model's items name no kind
        kind = "temporal" if "time" in when else "general"
    built.entries.append(
        RuleUKF.create(
            name,
            rule,
            kind=kind,
            database=origin.database,
            triggers=triggers,
            content_resources={"when": when} if when else {},
            **origin.fields("rule"),
        )
    )


def _value(item: dict[str, Any], view: SchemaView, origin: Origin, built: Built) -> None:
    phrase, value = text_of(item, "phrase"), text_of(item, "value")
    if not phrase or not value:
        raise Drop("empty")
    column = schema_column(view, text_of(item, "table"), text_of(item, "column"))
    r = column.content_resources
    enum = view.enum(column, value)
    if enum is not None:
        stored = enum.content_resources.get("value")
        if fold(phrase) == fold(str(stored)):
            raise Drop("repeats_name")
        built.entries.append(
            SynonymUKF.create(
                phrase_name(phrase),
                enum,
                target_name=f"{r['column']} = '{stored}'",
                database=origin.database,
                collection=MINED_COLLECTION,
                **origin.fields("value"),
            )
        )
        return
    check = view.value_check(column, value)
    if check == "missing":
        raise Drop("value_not_found")
    built.unchecked_values += check == "unchecked"
    literal = exp.convert(value).sql()
    built.entries.append(
        PredicateUKF.create(
            phrase_name(phrase),
            f"{r['table']}.{r['column']} = {literal}",
            database=origin.database,
            columns=[column],
            **origin.fields("value"),
        )
    )


def _taxonomy(item: dict[str, Any], view: SchemaView, origin: Origin, built: Built) -> None:
    name = text_of(item, "name")
    levels = item.get("levels")
    levels = levels if isinstance(levels, list) else []
    if not name:
        raise Drop("empty")
    columns = [
        schema_column(view, text_of(level, "table"), text_of(level, "column"))
        for level in levels
        if isinstance(level, dict)
    ]
    if len({c.id for c in columns}) < 2:
        raise Drop("too_few_levels")
    fields = origin.fields("taxonomy")
    sources = fields.pop("parents")  # TaxonomyUKF.create's ``parents`` are its levels' parents
    taxonomy = TaxonomyUKF.create(
        name,
        columns,
        database=origin.database,
        description=" > ".join(qualified(c) for c in columns),
        **fields,
    )
    built.entries.append(taxonomy.clone(parents=sources))
