"""Business semantics: taxonomies, predicates, synonyms, metrics and rules.

Each constructor links the entry to the schema items it depends on, so graph expansion can walk
from a matched business term to the columns and values that implement it:
``has_level`` (taxonomy → column), ``uses_enum`` / ``uses_column`` (predicate, metric → schema)
and ``synonym_of`` (synonym → any entry).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar, Literal

from ukf.base import BaseUKF

MetricKind = Literal["indicator", "term", "metric"]
RuleKind = Literal["temporal", "validity", "intent", "general"]


def _ids(items: Iterable[BaseUKF | str]) -> list[str]:
    return [item if isinstance(item, str) else item.id for item in items]


class TaxonomyUKF(BaseUKF):
    """A dependency hierarchy between columns, e.g. region > country > national area.

    ``content_resources``: ``levels`` (qualified column names, top first) and ``parents``
    (value → parent value) when the value tree is known.
    """

    type: Literal["taxonomy"] = "taxonomy"
    default_composer: ClassVar[str] = "taxonomy"

    @classmethod
    def create(
        cls,
        name: str,
        levels: list[BaseUKF],
        *,
        parents: dict[str, str] | None = None,
        database: str | None = None,
        **fields: Any,
    ) -> TaxonomyUKF:
        names = [getattr(level, "qualified_name", level.name) for level in levels]
        fields["content_resources"] = {
            "levels": names,
            "parents": dict(parents or {}),
            **fields.get("content_resources", {}),
        }
        fields["tags"] = cls.make_tags([("DATABASE", database)], fields.get("tags", ()))
        fields.setdefault("collection", "semantics")
        entry = cls(name=name, **fields)
        for depth, level in enumerate(levels):
            entry.relate("has_level", level.id, depth=depth)
        return entry


class PredicateUKF(BaseUKF):
    """A reusable filter with a business name: "domestic sales" → ``region = 'CN'``."""

    type: Literal["predicate"] = "predicate"
    default_composer: ClassVar[str] = "predicate"

    @classmethod
    def create(
        cls,
        name: str,
        condition: str,
        *,
        database: str | None = None,
        enums: Iterable[BaseUKF | str] = (),
        columns: Iterable[BaseUKF | str] = (),
        **fields: Any,
    ) -> PredicateUKF:
        fields["content_resources"] = {
            "condition": condition,
            **fields.get("content_resources", {}),
        }
        fields["tags"] = cls.make_tags([("DATABASE", database)], fields.get("tags", ()))
        fields.setdefault("collection", "semantics")
        fields.setdefault("content", condition)
        entry = cls(name=name, **fields)
        for target in _ids(enums):
            entry.relate("uses_enum", target)
        for target in _ids(columns):
            entry.relate("uses_column", target)
        return entry

    @property
    def condition(self) -> str:
        return self.content_resources["condition"]


class SynonymUKF(BaseUKF):
    """An alias phrase for another entry: "Nova" → the enum ``model = 'NV-200'``."""

    type: Literal["synonym"] = "synonym"
    default_composer: ClassVar[str] = "synonym"

    @classmethod
    def create(
        cls,
        phrase: str,
        target: BaseUKF | str,
        *,
        target_name: str | None = None,
        database: str | None = None,
        **fields: Any,
    ) -> SynonymUKF:
        target_id = target if isinstance(target, str) else target.id
        label = target_name or (target if isinstance(target, str) else target.name)
        # where the target lives (table, column, value), so that the synonym alone leads a
        # reader to the tables holding it
        located = (
            {}
            if isinstance(target, str)
            else {
                k: target.content_resources[k]
                for k in ("table", "column", "value")
                if target.content_resources.get(k) is not None
            }
        )
        fields["content_resources"] = {
            "target": target_id,
            "target_name": label,
            **located,
            **fields.get("content_resources", {}),
        }
        fields["tags"] = cls.make_tags([("DATABASE", database)], fields.get("tags", ()))
        fields.setdefault("collection", "semantics")
        fields.setdefault("content", f"{phrase} means {label}")
        entry = cls(name=phrase, **fields)
        entry.relate("synonym_of", target_id)
        return entry


class MetricUKF(BaseUKF):
    """An indicator, a business term or a metric formula (a SQL expression)."""

    type: Literal["metric"] = "metric"
    default_composer: ClassVar[str] = "metric"

    @classmethod
    def create(
        cls,
        name: str,
        formula: str,
        *,
        kind: MetricKind = "metric",
        unit: str | None = None,
        database: str | None = None,
        columns: Iterable[BaseUKF | str] = (),
        **fields: Any,
    ) -> MetricUKF:
        fields["content_resources"] = {
            "kind": kind,
            "formula": formula,
            "unit": unit,
            **fields.get("content_resources", {}),
        }
        fields["tags"] = cls.make_tags(
            [("DATABASE", database), ("METRIC_KIND", kind)], fields.get("tags", ())
        )
        fields.setdefault("collection", "semantics")
        fields.setdefault("content", formula)
        entry = cls(name=name, **fields)
        for target in _ids(columns):
            entry.relate("uses_column", target)
        return entry

    @property
    def formula(self) -> str:
        return self.content_resources["formula"]


class RuleUKF(BaseUKF):
    """A rule the SQL must follow: temporal (fiscal calendar), validity or intent."""

    type: Literal["rule"] = "rule"
    default_composer: ClassVar[str] = "rule"

    @classmethod
    def create(
        cls,
        name: str,
        content: str,
        *,
        kind: RuleKind = "general",
        database: str | None = None,
        **fields: Any,
    ) -> RuleUKF:
        fields["content_resources"] = {"kind": kind, **fields.get("content_resources", {})}
        fields["tags"] = cls.make_tags(
            [("DATABASE", database), ("RULE_KIND", kind)], fields.get("tags", ())
        )
        fields.setdefault("collection", "rules")
        return cls(name=name, content=content, **fields)

    @property
    def kind(self) -> str:
        return self.content_resources["kind"]
