"""Synthetic pairs as experiences, and what a synthesis run remembers for the next one.

A kept pair is an :class:`~ukf.ExperienceUKF` of the source's database, scope (owner,
workspace) and context, ``labeled`` and ``verified`` (by the back-check, not by a person),
``source="synthetic"`` and ``creator="synthesis"``, with priority below its source (and below
0, every human experience's default), so retrieval ranks it after human examples. Its
``content_resources["synthetic"]`` holds the provenance: ``source: "synthetic"``, the source
experience's id, the transform and the change, the SQL key, the back-check (the chain's SQL,
its row count) and the job. Its variant is the SQL key: two synthetic statements never share
an entry, even when the model gives them one question.

Idempotence and resumption: a variant whose SQL key is any experience's of the database
(human or synthetic) is ``known`` and not tried; a variant tried and dropped is remembered on
its source experience (``metadata["synthesis"]``: SQL key → outcome), so a run again (or a
job whose worker died) skips it too, unless asked to retry.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from agents.learn.mine.labeled import labeled_experiences
from agents.learn.synth.variants import Variant, sql_key
from kb.store import KnowledgeStore
from kb.target.results import Results
from ukf import ExperienceUKF

CREATOR = "synthesis"
SYNTHETIC = "synthetic"
MEMORY = "synthesis"


def is_synthetic(entry: ExperienceUKF) -> bool:
    """Whether ``entry`` was made by synthesis."""
    return entry.creator == CREATOR or SYNTHETIC in entry.content_resources


def synthesis_sources(store: KnowledgeStore, *, database: str | None = None) -> list[ExperienceUKF]:
    """Active labeled or verified experiences with SQL that synthesis did not make, by id."""
    found = labeled_experiences(store, database=database)
    return sorted((e for e in found if not is_synthetic(e)), key=lambda e: e.id)


def synthetic_experiences(
    store: KnowledgeStore, *, database: str | None = None
) -> list[ExperienceUKF]:
    """The synthetic experiences stored (of ``database``)."""
    tags = {"DATABASE": database} if database else None
    found = store.iterate(type="experience", tags=tags)
    return [e for e in found if isinstance(e, ExperienceUKF) and is_synthetic(e)]


def known_keys(store: KnowledgeStore, database: str, dialect: str) -> set[str]:
    """SQL keys of every experience of ``database`` (human and synthetic)."""
    keys: set[str] = set()
    for entry in store.iterate(type="experience", tags={"DATABASE": database}):
        if isinstance(entry, ExperienceUKF) and entry.sql:
            stored = entry.content_resources.get(SYNTHETIC, {}).get("sql_key")
            keys.add(stored or sql_key(entry.sql, dialect))
    return keys


def remembered(source: ExperienceUKF) -> dict[str, str]:
    """SQL key → outcome of the variants of ``source`` tried and dropped before."""
    note = source.metadata.get(MEMORY)
    return {str(k): str(v) for k, v in note.items()} if isinstance(note, dict) else {}


def remember(store: KnowledgeStore, notes: dict[str, dict[str, str]]) -> None:
    """Add ``notes`` (source id → {SQL key: outcome}) to their sources' memory (read afresh:
    only ``metadata["synthesis"]`` changes), then forget them."""
    if not notes:
        return
    current = store.get_many(list(notes))
    updated = [
        entry.clone(metadata={**entry.metadata, MEMORY: {**remembered(entry), **notes[uid]}})
        for uid, entry in current.items()
        if isinstance(entry, ExperienceUKF)
    ]
    store.upsert_many(updated)
    notes.clear()


def synthetic_pair(
    source: ExperienceUKF,
    variant: Variant,
    question: str,
    results: Results,
    *,
    database: str,
    dialect: str,
    key: str,
    back_check: dict[str, Any] | None = None,
    job_id: str | None = None,
) -> ExperienceUKF:
    """The experience of a synthetic pair (module docstring); ``back_check`` is filled in
    once the chain's answer matched."""
    provenance = {
        "source": SYNTHETIC,
        "source_experience": source.id,
        "source_question": source.question,
        "source_sql": source.sql,
        "transform": variant.transform,
        "change": variant.change,
        "detail": variant.detail,
        "sql_key": key,
        "rows": results.row_count,
        "back_check": back_check,
        "job": job_id,
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    return ExperienceUKF.create(
        question,
        variant.sql,
        database=database,
        dialect=dialect,
        context=source.context,
        result_schema=[{"name": c} for c in results.columns],
        labeled=True,
        verified=True,
        owner=source.owner,
        workspace=source.workspace,
        creator=CREATOR,
        source="synthetic",
        variant=f"synth-{key[:16]}",
        parents=[source.id],
        priority=min(source.priority, 0) - 1,
        content_resources={SYNTHETIC: provenance},
    )


def by_database(sources: Iterable[ExperienceUKF]) -> dict[str, list[ExperienceUKF]]:
    """``sources`` grouped by their ``[DATABASE:...]`` tag (None: untagged, skipped)."""
    grouped: dict[str, list[ExperienceUKF]] = {}
    for source in sources:
        database = next(iter(source.tag_values("DATABASE")), None)
        if database is not None:
            grouped.setdefault(database, []).append(source)
    return grouped
