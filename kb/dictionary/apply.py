"""Attaching a data dictionary's descriptions to the Table / Column UKF of a database.

Each record finds its entry among the active schema entries of its database in the global
layer (names matched case-insensitively) and gives it:

- its **description** (the ``description`` field, which the vector index embeds and the
  schema prompt shows);
- its **synonyms**, plus the description itself when it is short enough to be a name
  (at most :data:`NAME_WORDS` words, :data:`NAME_CHARS` characters: Spider's natural
  names, "Title 1 (no child left behind act)"), so the string index finds the entry by
  those words too; a synonym equal to the name in another spelling is left out;
- its **provenance** in ``metadata["dictionary"]``: ``file``, ``sha256``, ``record`` (the
  line or record), ``description`` and ``synonyms`` (what the dictionary added), ``own``
  (whether the description field is the dictionary's) and ``replaced`` (what it replaced).

Rule for descriptions from elsewhere (a database comment, the ``describe`` job, a person's
edit): they are **kept**, and the import lists each such conflict with both texts (the
dictionary's synonyms are still added, its description still recorded in the metadata).
With ``overwrite=True`` the dictionary's description replaces them and the old text is kept
in ``replaced``, and comes back if a later version of the dictionary drops the record.

Re-importing: what the previous import of the same file (by name) gave is taken off first,
then the new record applied, so an unchanged dictionary gives every entry exactly what it has
(nothing written, the store version does not move), and a changed one replaces its old
descriptions and synonyms; an entry the new version no longer mentions gets back what it had
before (``retracted``). A record whose table or column is not in the store is ``unknown``
(listed, not written); one that only repeats the name in another spelling (Spider's
``song name`` for ``Song_Name``) is ``uninformative`` (counted, not written); a second record
about the same entry is a ``duplicate`` (counted per table; the first one wins). Everything is
written in one transaction, or not at all (``dry_run``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from kb.dictionary.read import DataDictionary, DictionaryError, DictionaryRecord
from kb.store import KnowledgeStore
from ukf import BaseUKF
from ukf.base import utcnow
from ukf.tags import sanitize_tag_value
from ukf.types.schema import SCHEMA_COLLECTION

DICTIONARY = "dictionary"
NAME_WORDS = 8
NAME_CHARS = 64
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[\s_\-./]+")
Key = tuple[str, str, str]  # (database, table, column ""), case-folded


@dataclass
class DictionaryReport:
    """What importing one dictionary did (or would do, ``dry_run``)."""

    file: str
    sha256: str
    dry_run: bool
    databases: list[str] = field(default_factory=list)
    matched: int = 0
    written: int = 0
    unchanged: int = 0
    retracted: int = 0
    uninformative: int = 0
    unknown: list[dict[str, str]] = field(default_factory=list)
    kept: list[dict[str, str]] = field(default_factory=list)
    missing_databases: list[str] = field(default_factory=list)
    per_table: dict[str, Counter[str]] = field(default_factory=dict)
    written_ids: list[str] = field(default_factory=list)
    store_version: int = 0

    def count(self, database: str, table: str, outcome: str) -> None:
        self.per_table.setdefault(f"{database}.{table}", Counter())[outcome] += 1

    def to_dict(self) -> dict[str, Any]:
        """The JSON report (written ids left out: the audit log has them)."""
        return {
            "file": self.file,
            "sha256": self.sha256,
            "dry_run": self.dry_run,
            "databases": self.databases,
            "matched": self.matched,
            "written": self.written,
            "unchanged": self.unchanged,
            "retracted": self.retracted,
            "uninformative": self.uninformative,
            "unknown": len(self.unknown),
            "unknown_records": self.unknown,
            "kept": self.kept,
            "missing_databases": self.missing_databases,
            "per_table": {name: dict(counts) for name, counts in sorted(self.per_table.items())},
            "store_version": self.store_version,
        }

    def summary(self) -> str:
        verb = "would write" if self.dry_run else "wrote"
        return (
            f"{self.file}: {self.matched} matched, {verb} {self.written}, "
            f"{self.unchanged} unchanged, {len(self.unknown)} unknown, "
            f"{len(self.kept)} descriptions kept, {self.retracted} retracted, "
            f"{self.uninformative} only repeat a name"
        )


def fold(text: str) -> str:
    """``CustNm``, ``cust_nm``, ``Cust-NM`` → ``cust nm``."""
    return " ".join(_SEPARATORS.sub(" ", _CAMEL.sub(" ", text)).split()).casefold()


def apply_dictionary(
    store: KnowledgeStore,
    dictionary: DataDictionary,
    *,
    database: str | None = None,
    dry_run: bool = False,
    overwrite: bool = False,
) -> DictionaryReport:
    """Attach ``dictionary`` to the schema entries in ``store`` (see the module docstring).

    Args:
        database: the database of records that name none; when given, records naming another
            database are left out.
        dry_run: report without writing.
        overwrite: replace descriptions from other sources (else they are kept and listed).

    Raises:
        DictionaryError: a record names no database and ``database`` is None, or no database
            the dictionary is about has profiled tables in the store.
    """
    report = DictionaryReport(dictionary.name, dictionary.sha256, dry_run)
    records = _records_by_database(dictionary, database)
    entries: dict[Key, BaseUKF] = {}
    for name in records:
        found = _schema_entries(store, name)
        if found:
            report.databases.append(name)
            entries.update(found)
        else:
            report.missing_databases.append(name)
    if not report.databases:
        named = ", ".join(report.missing_databases)
        raise DictionaryError(
            f"{dictionary.name}: no profiled tables of database {named} in the knowledge store"
        )
    changed: list[BaseUKF] = []
    seen: set[Key] = set()
    for name in report.databases:
        for record in records[name]:
            key = (name.casefold(), record.table.casefold(), (record.column or "").casefold())
            entry = entries.get(key)
            if entry is None:
                report.unknown.append(_unknown(name, record))
                report.count(name, record.table, "unknown")
                continue
            if key in seen:  # the first record about an entry wins
                report.count(name, record.table, "duplicate")
                continue
            report.matched += 1
            if _says_nothing(entry, record):
                report.uninformative += 1
                report.count(name, record.table, "uninformative")
                continue
            seen.add(key)
            updated = _applied(entry, record, dictionary, overwrite, report)
            _note(report, name, record.table, entry, updated, changed)
            entries[key] = updated
    for key, entry in entries.items():
        gave = entry.metadata.get(DICTIONARY)
        if key in seen or not isinstance(gave, dict) or gave.get("file") != dictionary.name:
            continue
        report.retracted += 1
        _note(report, key[0], key[1], entry, _retracted(entry), changed)
    if changed and not dry_run:
        now = utcnow()
        report.store_version = store.upsert_many(
            e.model_copy(update={"timestamp": now}) for e in changed
        )
    else:
        report.store_version = store.version
    report.written_ids = [e.id for e in changed]
    return report


def _records_by_database(
    dictionary: DataDictionary, database: str | None
) -> dict[str, list[DictionaryRecord]]:
    grouped: dict[str, list[DictionaryRecord]] = {}
    for record in dictionary.records:
        name = record.database or database
        if name is None:
            raise DictionaryError(
                f"{dictionary.name}: {record.where}: the record names no database; "
                "say which (almanac kb dictionary --database, the job's database_name)"
            )
        if database is not None and name != database:
            continue
        grouped.setdefault(name, []).append(record)
    if not grouped:
        raise DictionaryError(f"{dictionary.name}: no records about database {database!r}")
    return grouped


def _schema_entries(store: KnowledgeStore, database: str) -> dict[Key, BaseUKF]:
    """The active global Table and Column entries of ``database`` by folded name."""
    tag = sanitize_tag_value(database)
    found: dict[Key, BaseUKF] = {}
    for entry in store.iterate(
        type=["table", "column"],
        collection=SCHEMA_COLLECTION,
        tags={"DATABASE": tag},
        active=True,
    ):
        if entry.owner is not None or entry.workspace is not None:
            continue
        resources = entry.content_resources
        table = str(resources.get("table", ""))
        column = str(resources.get("column", "")) if entry.type == "column" else ""
        found[(database.casefold(), table.casefold(), column.casefold())] = entry
    return found


def _unknown(database: str, record: DictionaryRecord) -> dict[str, str]:
    what = "table" if record.column is None else "column"
    return {
        "database": database,
        "record": record.where,
        what: record.subject,
    }


def _note(
    report: DictionaryReport,
    database: str,
    table: str,
    old: BaseUKF,
    new: BaseUKF,
    changed: list[BaseUKF],
) -> None:
    if new.to_json() == old.to_json():
        report.unchanged += 1
        report.count(database, table, "unchanged")
        return
    report.written += 1
    report.count(database, table, "written")
    changed.append(new)


# ------------------------------------------------------------------ one entry
def _before(entry: BaseUKF) -> tuple[str, list[str]]:
    """The entry's description and synonyms without what a dictionary import gave it."""
    gave = entry.metadata.get(DICTIONARY)
    if not isinstance(gave, dict):
        return entry.description, list(entry.synonyms)
    added = set(gave.get("synonyms") or [])
    synonyms = [s for s in entry.synonyms if s not in added]
    description = entry.description
    if gave.get("own") and description == gave.get("description"):
        description = str(gave.get("replaced") or "")
    return description, synonyms


def _applied(
    entry: BaseUKF,
    record: DictionaryRecord,
    dictionary: DataDictionary,
    overwrite: bool,
    report: DictionaryReport,
) -> BaseUKF:
    base_description, base_synonyms = _before(entry)
    offered = list(record.synonyms)
    if record.description and _is_name(record.description):
        offered.insert(0, record.description)
    taken = {fold(entry.name), *(fold(s) for s in base_synonyms)}
    added: list[str] = []
    for synonym in offered:
        if fold(synonym) and fold(synonym) not in taken:
            taken.add(fold(synonym))
            added.append(synonym)
    note: dict[str, Any] = {
        "file": dictionary.name,
        "sha256": dictionary.sha256,
        "record": record.where,
        "description": record.description,
        "synonyms": added,
        "own": False,
    }
    description = base_description
    if record.description and fold(record.description) != fold(base_description):
        if not base_description or overwrite:
            description, note["own"] = record.description, True
            if base_description:
                note["replaced"] = base_description
        else:
            report.kept.append(
                {
                    "entry": entry.id,
                    "subject": record.subject,
                    "record": record.where,
                    "kept": base_description,
                    "dictionary": record.description,
                }
            )
    metadata = {**entry.metadata, DICTIONARY: note}
    return entry.model_copy(
        update={
            "description": description,
            "synonyms": [*base_synonyms, *added],
            "metadata": metadata,
        }
    )


def _retracted(entry: BaseUKF) -> BaseUKF:
    description, synonyms = _before(entry)
    metadata = {k: v for k, v in entry.metadata.items() if k != DICTIONARY}
    return entry.model_copy(
        update={"description": description, "synonyms": synonyms, "metadata": metadata}
    )


def _says_nothing(entry: BaseUKF, record: DictionaryRecord) -> bool:
    """Whether the record only repeats the entry's name (Spider's ``song name`` for
    ``Song_Name``): nothing to write."""
    name = fold(entry.name)
    return all(fold(text) == name for text in (record.description, *record.synonyms) if text)


def _is_name(text: str) -> bool:
    return len(text) <= NAME_CHARS and len(text.split()) <= NAME_WORDS
