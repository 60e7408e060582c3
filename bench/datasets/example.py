"""The common in-memory form of one benchmark question: `Example` and its `QueryContext`.

Every loader in `bench.datasets` turns its source layout into a list of `Example`s, so runners,
metrics and reports only ever see this one shape.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import sqlglot
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from sqlglot import exp

from ukf import QueryContext, format_tag, parse_tag, tag_values

logger = logging.getLogger(__name__)

_STRING_LITERAL = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`")
_INNERMOST_PARENS = re.compile(r"\([^()]*\)")
_ORDER_BY = re.compile(r"\border\s+by\b", re.IGNORECASE)


def make_tag(slot: str, value: str) -> str:
    """Builds a tag in Almanac's `[SLOT:value]` format (see `ukf.tags`)."""
    return format_tag(slot, value)


def has_top_level_order_by(sql: str, dialect: str = "sqlite") -> bool:
    """Tells whether a query orders its final result (ORDER BY on the outermost query).

    ORDER BY inside subqueries or window specifications does not count. The query is parsed with
    sqlglot; when sqlglot cannot parse it, string literals and parenthesised parts are blanked out
    and the rest is searched for ``ORDER BY``.

    Args:
        sql: One SQL statement.
        dialect: sqlglot dialect used to parse it.

    Returns:
        True when the outermost query has an ORDER BY clause.
    """
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except (sqlglot.errors.SqlglotError, ValueError):
        logger.debug("sqlglot could not parse %r; using the regex fallback", sql)
        return _regex_top_level_order_by(sql)
    while isinstance(tree, exp.Subquery):
        if tree.args.get("order") is not None:
            return True
        tree = tree.this
    return tree is not None and tree.args.get("order") is not None


def _regex_top_level_order_by(sql: str) -> bool:
    text = _STRING_LITERAL.sub("''", sql)
    previous = None
    while previous != text:
        previous, text = text, _INNERMOST_PARENS.sub(" ", text)
    return _ORDER_BY.search(text) is not None


class Example(BaseModel):
    """One benchmark question with its gold SQL.

    Attributes:
        id: Identifier, unique within its dataset.
        question: The natural-language question.
        database: Database id (e.g. Spider's ``db_id``).
        database_url: SQLAlchemy URL of the database, e.g. ``sqlite:////abs/path/db.sqlite``.
        context: Query time and user profile.
        gold_sql: Gold SQL variants; the first is canonical. Never empty.
        gold_sql_by_dialect: Optional gold variants per SQL dialect (``"sqlite"``, ...).
        order_relevant: Whether row order matters when comparing results. When not given, it is
            computed from the canonical gold SQL (top-level ORDER BY, see
            `has_top_level_order_by`).
        tags: Tags in ``[SLOT:value]`` form, e.g. ``[DATASET:spider]``.
        difficulty: Source difficulty label (Spider hardness, BIRD difficulty, ...).
        split: Source split (``dev``, ``test``, ``train``, ``fewshot``, ...).
        evidence: External knowledge given with the question (BIRD).
        metadata: Anything else the source carries that is worth keeping.
    """

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    question: str
    database: str
    database_url: str | None = None
    context: QueryContext = Field(default_factory=QueryContext)
    gold_sql: list[str] = Field(min_length=1)
    gold_sql_by_dialect: dict[str, list[str]] = Field(default_factory=dict)
    order_relevant: bool = False
    tags: list[str] = Field(default_factory=list)
    difficulty: str | None = None
    split: str | None = None
    evidence: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _compute_order_relevant(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("order_relevant") is not None:
            return data
        gold = data.get("gold_sql")
        if isinstance(gold, list) and gold and isinstance(gold[0], str):
            data = {**data, "order_relevant": has_top_level_order_by(gold[0])}
        return data

    @field_validator("gold_sql")
    @classmethod
    def _no_blank_gold(cls, gold: list[str]) -> list[str]:
        if any(not sql.strip() for sql in gold):
            raise ValueError("gold SQL variants must not be blank")
        return gold

    @field_validator("tags")
    @classmethod
    def _well_formed_tags(cls, tags: list[str]) -> list[str]:
        for tag in tags:
            parse_tag(tag)  # raises MalformedTagError (a ValueError) naming the tag
        return tags

    @property
    def canonical_sql(self) -> str:
        """The canonical (first) gold SQL."""
        return self.gold_sql[0]

    def gold_for(self, dialect: str) -> list[str]:
        """Gold variants for a dialect, falling back to `gold_sql`.

        Args:
            dialect: Dialect name as used in `gold_sql_by_dialect`.

        Returns:
            The dialect's variants when present, otherwise `gold_sql`.
        """
        return self.gold_sql_by_dialect.get(dialect) or self.gold_sql

    def tag_values(self, slot: str) -> list[str]:
        """Values of this example's tags with the given slot, in tag order.

        Args:
            slot: Slot name, e.g. ``"TRAIT"``.

        Returns:
            The values, e.g. ``["implicit_intent"]``.
        """
        return tag_values(self.tags, slot)
