"""Query templates: the SQL labeled questions of one shape share, with their values as slots.

"what is the population of alaska" → ``SELECT population FROM state WHERE state_name =
'alaska'`` and "... of texas" → ``... = 'texas'`` are one template, ``SELECT population FROM
state WHERE state_name = :slot0``, whose slot takes a value of ``state.state_name``.

:func:`slotted` reads one experience: a string literal compared (``=`` or ``IN``) with a
column, that the question says (word-bounded, case-insensitive), becomes a slot typed by the
column's ``(table, column)`` (aliases resolved as :mod:`agents.learn.mine.sql_facts` does);
slots are numbered in the order the question says their values, the same literal used twice
is one slot. A literal the question does not say stays in the SQL. The slotted SQL, rendered
by sqlglot with identifiers normalised, is the template's *key*: experiences whose keys are
equal form a group.

:func:`mine_templates` turns every group of at least ``min_support`` experiences (one
database, one scope) with at least one slot, one of them mined in this run, into a candidate
``KnowledgeUKF`` (:func:`agents.learn.mine.entries.template`). Its ``parents`` are the
supporters mined in this run (a later run that mines another supporter adds it: the merge
unions parents), like every mined entry's sources; ``metadata["template"]`` keeps the
support and every supporter, earlier labeled experiences included. The regression gate never
judges a candidate on its parents, and hides each held question's own experience: a template
is thus judged leave-one-out on the earlier supporters (its examples must agree without the
question's own), instead of never on a question of its shape.
A template whose filled SQL is not one read-only query is never produced. At ask,
:mod:`agents.sql.template_fill` fills an active template with the question's values.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import sqlglot
from sqlglot import expressions as exp
from sqlglot.errors import SqlglotError

from agents.learn.mine import entries
from agents.learn.mine.sql_facts import (
    QUOTED_STRING_DIALECTS,
    Scopes,
    quoted_values_as_strings,
)
from kb.target.sql_guard import UnsafeSQLError, check_read_only, sqlglot_dialect
from ukf import ExperienceUKF, KnowledgeUKF

TEMPLATE_KIND = "template"
MIN_SUPPORT = 2
SLOT_PREFIX = "slot"
Column = tuple[str, str]


@dataclass(frozen=True)
class Slot:
    """One value of a template: the ``(table, column)`` pairs it is compared with."""

    columns: tuple[Column, ...]

    def to_dict(self) -> dict[str, list[list[str]]]:
        return {"columns": [list(c) for c in self.columns]}

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Slot:
        raw = data.get("columns") or []
        return cls(tuple((str(t), str(c)) for t, c in raw))  # type: ignore[union-attr]


@dataclass(frozen=True)
class Slotted:
    """An experience's SQL with the question's values as slots."""

    key: str  # the slotted SQL (placeholders :slot0, :slot1, ...)
    slots: tuple[Slot, ...]
    values: tuple[str, ...]  # the literal of each slot, as the SQL wrote it


def _whole_words(value: str) -> re.Pattern[str]:
    """``value`` as whole words, case-insensitive."""
    return re.compile(rf"(?<!\w){re.escape(value)}(?!\w)", re.IGNORECASE)


def said(question: str, value: str) -> int | None:
    """Where ``question`` says ``value`` as whole words (case-insensitive); None if not."""
    found = _whole_words(value).search(question)
    return found.start() if found else None


def slotted(question: str, sql: str, dialect: str = "sqlite") -> Slotted | None:
    """``sql`` with the values ``question`` says as slots (see the module docstring); None
    when it does not parse as a query."""
    read = sqlglot_dialect(dialect)
    try:
        tree = sqlglot.parse_one(sql, read=read)
    except SqlglotError:
        return None
    if tree is None or not isinstance(tree, exp.Query):
        return None
    if read in QUOTED_STRING_DIALECTS:
        quoted_values_as_strings(tree)
    scopes = Scopes(tree)
    found: dict[str, tuple[int, list[exp.Literal], set[Column]]] = {}
    for literal, column in _compared(tree):
        if scopes.is_derived(column):
            continue
        table = scopes.table_of(column)
        text = literal.this
        where = said(question, text) if table and text.strip() else None
        if table is None or where is None:
            continue
        _, nodes, columns = found.setdefault(text.casefold(), (where, [], set()))
        nodes.append(literal)
        columns.add((table, column.name.lower()))
    order = sorted(found, key=lambda v: (found[v][0], -len(v)))
    slots, values = [], []
    for index, value in enumerate(order):
        _, nodes, columns = found[value]
        for node in nodes:
            node.replace(exp.Placeholder(this=f"{SLOT_PREFIX}{index}"))
        slots.append(Slot(tuple(sorted(columns))))
        values.append(nodes[0].this)
    return Slotted(tree.sql(dialect=read, normalize=True), tuple(slots), tuple(values))


def _compared(tree: exp.Expression) -> Iterable[tuple[exp.Literal, exp.Column]]:
    """String literals compared with a column by ``=`` or ``IN (...)``."""
    for node in tree.find_all(exp.EQ, exp.In):
        if isinstance(node, exp.In):
            if isinstance(node.this, exp.Column) and not node.args.get("query"):
                for item in node.expressions:
                    if isinstance(item, exp.Literal) and item.is_string:
                        yield item, node.this
            continue
        left, right = node.this, node.expression
        if isinstance(left, exp.Literal):
            left, right = right, left
        if isinstance(left, exp.Column) and isinstance(right, exp.Literal) and right.is_string:
            yield right, left


def fill(key: str, values: Sequence[str], dialect: str = "sqlite") -> str:
    """The template ``key`` with slot ``i`` replaced by the string ``values[i]``.

    Raises:
        ValueError: when a slot of ``key`` has no value (the key and values are named).
    """
    read = sqlglot_dialect(dialect)
    tree = sqlglot.parse_one(key, read=read)

    def literal(node: exp.Expression) -> exp.Expression:
        if not isinstance(node, exp.Placeholder) or not str(node.this).startswith(SLOT_PREFIX):
            return node
        index = int(str(node.this)[len(SLOT_PREFIX) :])
        if index >= len(values):
            raise ValueError(f"no value for slot {index} of {key!r} in {list(values)!r}")
        return exp.Literal.string(values[index])

    return tree.transform(literal).sql(dialect=read)


def read_only(key: str, slots: int, dialect: str = "sqlite") -> bool:
    """Whether ``key`` filled with ``slots`` values is one read-only query."""
    try:
        check_read_only(fill(key, ["x"] * slots, dialect), dialect)
    except (UnsafeSQLError, SqlglotError, ValueError):
        return False
    return True


def dialect_of(experience: ExperienceUKF) -> str:
    return str(experience.content_resources.get("dialect") or "sqlite")


def mine_templates(
    experiences: Iterable[ExperienceUKF],
    *,
    job_id: str,
    miner: str,
    min_support: int = MIN_SUPPORT,
    history: Iterable[ExperienceUKF] = (),
) -> list[KnowledgeUKF]:
    """One candidate template per group of ``min_support`` or more labeled experiences with
    one slotted SQL (one database and scope), with at least one slot, that holds one of
    ``experiences``: ``history`` (labeled experiences mined before) adds support to their
    groups, but a group of ``history`` alone is not mined again (nor one of another
    workspace than the experiences mined)."""
    groups: dict[tuple[str, str | None, str | None, str], list[ExperienceUKF]] = defaultdict(list)
    shapes: dict[str, Slotted] = {}
    experiences = list(experiences)
    mined = {e.id for e in experiences}
    for experience in [*experiences, *history]:
        database = next(iter(experience.tag_values("DATABASE")), "")
        if experience.id in shapes or not experience.sql or not database:
            continue
        shape = slotted(experience.question, experience.sql, dialect_of(experience))
        if shape is None or not shape.slots:
            continue
        shapes[experience.id] = shape
        groups[(database, experience.workspace, experience.owner, shape.key)].append(experience)
    found = []
    for (database, _, _, key), members in groups.items():
        shape, dialect = shapes[members[0].id], dialect_of(members[0])
        if len(members) < min_support or not mined & {e.id for e in members}:
            continue
        if not read_only(key, len(shape.slots), dialect):
            continue
        members = sorted(members, key=lambda e: e.id)
        own = [e for e in members if e.id in mined]
        prov = entries.Provenance(job_id, miner, own[0], database, others=own[1:])
        sketches = [_sketch(e.question, shapes[e.id]) for e in members]
        support = {"support": len(members), "supporters": [e.id for e in members]}
        shown = fill(key, [f"<{_named(slot)}>" for slot in shape.slots], dialect)
        found.append(entries.template(key, shape.slots, shown, dialect, prov, sketches, support))
    return found


def _sketch(question: str, shape: Slotted) -> str:
    """The question with each slot's value replaced by ``<table.column>``."""
    text = question
    for value, slot in zip(shape.values, shape.slots, strict=True):
        text = _whole_words(value).sub(f"<{_named(slot)}>", text)
    return text


def _named(slot: Slot) -> str:
    return "/".join(f"{t}.{c}" for t, c in slot.columns)
