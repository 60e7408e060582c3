"""Unified Knowledge Format: the data model every other layer reads and writes.

Importing ``ukf`` registers every template type, the template composers and the built-in
triggers (registration only: nothing is read or written).
"""

from ukf import composers as _composers  # noqa: F401  (registers composers)
from ukf import triggers as _triggers  # noqa: F401  (registers triggers)
from ukf.base import AUTHORITATIVE_SOURCES, MINING_KEY, BaseUKF, Source, bump_version
from ukf.context import QueryContext, Reader
from ukf.errors import (
    FrozenFieldError,
    IdMismatchError,
    MalformedTagError,
    UKFError,
    UnknownComposerError,
    UnknownTriggerError,
    UnknownTypeError,
)
from ukf.hashing import IDENTITY_FIELDS, canonical_json, stable_hash
from ukf.registry import composer, trigger, type_for, type_names
from ukf.relations import Auth, Related
from ukf.tags import Tag, format_tag, parse_tag, tag_values, tags_by_slot
from ukf.types import (
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

__all__ = [
    "AUTHORITATIVE_SOURCES",
    "IDENTITY_FIELDS",
    "MINING_KEY",
    "Auth",
    "BaseUKF",
    "ColumnUKF",
    "DocumentUKF",
    "EnumUKF",
    "ExperienceUKF",
    "ForeignKey",
    "FrozenFieldError",
    "IdMismatchError",
    "KnowledgeUKF",
    "MalformedTagError",
    "MetricUKF",
    "PredicateUKF",
    "QueryContext",
    "Reader",
    "Related",
    "RuleUKF",
    "Source",
    "SynonymUKF",
    "TableUKF",
    "Tag",
    "TaxonomyUKF",
    "UKFError",
    "UnknownComposerError",
    "UnknownTriggerError",
    "UnknownTypeError",
    "bump_version",
    "canonical_json",
    "composer",
    "format_tag",
    "parse_tag",
    "stable_hash",
    "tag_values",
    "tags_by_slot",
    "trigger",
    "type_for",
    "type_names",
]
