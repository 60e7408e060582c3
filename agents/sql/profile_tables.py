"""The asker's own tables: where a database keeps one table per entity (a brand's
``income_nova``, ``income_aurora``, ...) and "we", "our" mean the entity of the asker's
profile, a query that read another entity's table gets the asker's, without a model.

The knowledge pack's rule carries the mapping as data, in ``content_resources``::

    {"profile_tables": {"attribute": "department", "words": ["we", "our", "us", "my"],
                        "entities": {"NV": {"names": ["Nova"],
                                            "tables": {"income": "income_nova",
                                                       "sales_ledger": "sales_ledger_nova"}},
                                     "AU": {...}}}}

A table of one entity stands for the same family's table of another (``income`` above).
For a question that says one of ``words`` (as a word), asked by a user whose profile
``attribute`` names an entity, and that names no other entity (its ``names``, as words),
:func:`with_own_tables` reads the asker's table of each family in place of another entity's
(columns qualified by the old name follow). A query that already reads the asker's table of
a family beside another entity's (a comparison) is left as written. The 1.5B read another
brand's table on 8 of the 134 unseen AutoFin test answers whose question said "our" (the
rule's text was in its prompt); the rewrite made 4 of them right and none wrong
(``python -m bench.replay_filters``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, SqlglotError

from agents.rag.agent import RagContext
from agents.sql.default_filters import Filtered
from agents.sql.extract import statement_only
from ukf import BaseUKF

log = logging.getLogger(__name__)
RESOURCE_KEY = "profile_tables"


@dataclass(frozen=True)
class OwnTables:
    """Each other entity's table (lower-cased) and the asker's table of its family."""

    replacements: Mapping[str, str]
    rule: str


def own_tables_of(entry: BaseUKF, question: str, profile: Mapping[str, object]) -> OwnTables | None:
    """What ``entry``'s mapping (see the module docstring) swaps for ``question`` asked by a
    user with ``profile``; None when it does not apply or is malformed (logged)."""
    spec = entry.content_resources.get(RESOURCE_KEY)
    if spec is None:
        return None
    problem = _malformed(spec)
    if problem:
        log.warning("%r: malformed %s (%s): %r", entry.name, RESOURCE_KEY, problem, spec)
        return None
    entities = spec["entities"]
    mine = entities.get(str(profile.get(spec["attribute"])))
    if mine is None or not _says(question, spec["words"]):
        return None
    others = [e for e in entities.values() if e is not mine]
    if any(_says(question, other.get("names", [])) for other in others):
        return None
    own = mine["tables"]
    replacements = {
        table.casefold(): own[family]
        for other in others
        for family, table in other["tables"].items()
        if family in own
    }
    return OwnTables(replacements, entry.name) if replacements else None


def _malformed(spec: object) -> str:
    """What is wrong with a ``profile_tables`` mapping ("" when nothing)."""
    if not isinstance(spec, Mapping) or not isinstance(spec.get("attribute"), str):
        return "no mapping with an attribute"
    if not _strings(spec.get("words")) or not isinstance(spec.get("entities"), Mapping):
        return "words must be a list of strings, entities a mapping"
    for key, entity in spec["entities"].items():
        if not isinstance(entity, Mapping) or not _strings(entity.get("names", [])):
            return f"entity {key!r}: no mapping with a list of names"
        tables = entity.get("tables")
        if not isinstance(tables, Mapping) or not all(
            isinstance(t, str) and t.isidentifier() for t in tables.values()
        ):
            return f"entity {key!r}: tables must map families to table names"
    return ""


def _strings(items: object) -> bool:
    return isinstance(items, list) and all(isinstance(i, str) and i for i in items)


def _says(question: str, words: Iterable[str]) -> bool:
    return any(re.search(rf"\b{re.escape(w)}\b", question, re.I) for w in words)


def own_tables_among(
    entries: Iterable[BaseUKF], question: str, profile: Mapping[str, object]
) -> OwnTables | None:
    """The asker's own tables from the first rule of ``entries`` whose mapping applies."""
    for entry in entries:
        found = own_tables_of(entry, question, profile) if entry.type == "rule" else None
        if found is not None:
            return found
    return None


def tables_for(rag: RagContext) -> OwnTables | None:
    """The asker's own tables for ``rag``'s question, from the rules the retriever let
    through (their text need not have fitted in the prompt)."""
    entries = (item.entry for item in [*rag.evidence.items, *rag.evidence.dropped])
    return own_tables_among(entries, rag.question, rag.user_profile)


def with_own_tables(sql: str, tables: OwnTables, dialect: str) -> Filtered | None:
    """``sql`` reading the asker's tables in place of other entities' (see the module
    docstring); None when nothing changed, or ``sql`` cannot be read or written back."""
    statement = statement_only(sql)
    if not statement or not tables.replacements:
        return None
    try:
        tree = sqlglot.parse_one(statement, read=dialect)
    except (SqlglotError, RecursionError):
        return None
    ctes = {cte.alias.casefold() for cte in tree.find_all(exp.CTE)}
    aliases = {t.alias.casefold() for t in tree.find_all(exp.Table) if t.alias}
    read = {t.name.casefold() for t in tree.find_all(exp.Table)}
    swapped: dict[str, str] = {}
    qualifiers: dict[str, str] = {}  # columns qualified by a swapped table's own name follow it
    for node in list(tree.find_all(exp.Table)):
        old = node.name.casefold()
        new = tables.replacements.get(old)
        if new is None or new.casefold() in read or old in ctes:  # a comparison, or a CTE
            continue
        node.set("this", exp.to_identifier(new))
        swapped[old] = new
        if not node.alias and old not in aliases:
            qualifiers[old] = new
    if not swapped:
        return None
    for column in tree.find_all(exp.Column):
        if column.table and column.table.casefold() in qualifiers:
            column.set("table", exp.to_identifier(qualifiers[column.table.casefold()]))
    try:
        written = tree.sql(dialect=dialect, unsupported_level=ErrorLevel.RAISE)
    except (SqlglotError, RecursionError):
        return None
    head = sql[: sql.rfind(statement)] if statement in sql else ""
    notes = [f"the asker's table: {new} for {old} ({tables.rule})" for old, new in swapped.items()]
    return Filtered(sql=head + written, notes=notes)
