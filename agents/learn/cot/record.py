"""Where an experience keeps its checked CoT: ``profile["cot"]``.

A passing record::

    {"text": "1. ...\\n2. ...", "steps": ["...", "..."], "sql_hash": "<16 hex>",
     "passed": true, "verdict": {...}, "model": "qwen2.5-1.5b", "attempts": 1, "at": "..."}

A failed one keeps no text (only checked explanations are kept), just what was tried:
``{"sql_hash", "passed": false, "verdict", "model", "attempts", "at"}``, so a run that
resumes does not ask the same model about the same SQL again (unless told to retry).

The record is about the SQL whose hash it carries (:func:`sql_hash`, whitespace-insensitive):
an experience whose SQL changed has no CoT until it is profiled again.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ukf import BaseUKF, ExperienceUKF

COT = "cot"


def sql_hash(sql: str) -> str:
    """16 hex digits of SHA-256 over ``sql`` with its whitespace collapsed."""
    return hashlib.sha256(" ".join(sql.split()).encode()).hexdigest()[:16]


def cot_record(entry: BaseUKF) -> dict[str, Any] | None:
    """The experience's CoT record about its current SQL (passing or not), else None."""
    record = entry.profile.get(COT)
    sql = entry.content_resources.get("sql") if entry.type == "experience" else None
    if not isinstance(record, dict) or not sql or record.get("sql_hash") != sql_hash(sql):
        return None
    return record


def checked_cot(entry: BaseUKF) -> list[str] | None:
    """The steps of the experience's passing CoT for its current SQL, else None."""
    record = cot_record(entry)
    if record is None or not record.get("passed"):
        return None
    steps = record.get("steps")
    return [str(s) for s in steps] if isinstance(steps, list) and steps else None


def with_cot(entry: ExperienceUKF, record: dict[str, Any]) -> ExperienceUKF:
    """``entry`` with ``record`` as its CoT (same id; nothing else changes)."""
    updated = entry.clone(profile={**entry.profile, COT: record})
    assert isinstance(updated, ExperienceUKF) and updated.id == entry.id
    return updated
