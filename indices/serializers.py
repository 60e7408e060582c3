"""Serializers: the texts an entry is embedded by, one vector index per serializer.

Experiences are found by their question (``query``), its structure (``sketch``), their tags,
their SQL, the SQL's comment header, their reasoning (``cot``) and their checked CoT
(``cot_profile``: the numbered steps :mod:`agents.learn.cot` stores in ``profile["cot"]``
when they passed the checker); every other entry by its
name, synonyms and description (``name_description``). A serializer returns None when the
entry has nothing to say for it.
"""

from __future__ import annotations

from collections.abc import Callable

from ukf import BaseUKF

Serializer = Callable[[BaseUKF], str | None]
EXPERIENCE_SERIALIZERS = (
    "query",
    "sketch",
    "tags",
    "sql",
    "comment_header",
    "cot",
    "cot_profile",
)
GENERAL_SERIALIZER = "name_description"


def _resource(entry: BaseUKF, key: str) -> str | None:
    value = entry.content_resources.get(key) if entry.type == "experience" else None
    return value if isinstance(value, str) and value.strip() else None


def comment_header(sql: str | None) -> str | None:
    """The leading ``--`` comment lines of a SQL text, joined."""
    lines = []
    for line in (sql or "").splitlines():
        stripped = line.strip()
        if stripped.startswith("--"):
            lines.append(stripped.lstrip("-").strip())
        elif stripped:
            break
    return " ".join(lines) or None


def cot_profile(entry: BaseUKF) -> str | None:
    """An experience's checked CoT text (``profile["cot"]`` that passed), else None."""
    record = entry.profile.get("cot") if entry.type == "experience" else None
    if not isinstance(record, dict) or not record.get("passed"):
        return None
    text = record.get("text")
    return text if isinstance(text, str) and text.strip() else None


def name_description(entry: BaseUKF) -> str | None:
    if entry.type == "experience":
        return None
    about = entry.description or entry.short_description or entry.content[:300]
    parts = [entry.name, *entry.synonyms]
    return "; ".join(parts) + (f": {about}" if about else "")


def serializers(sketch: Callable[[str], str] | None = None) -> dict[str, Serializer]:
    """All serializers by name; ``sketch`` turns a question into its query sketch."""

    def sketch_of(entry: BaseUKF) -> str | None:
        question = _resource(entry, "question")
        return sketch(question) if question and sketch else None

    return {
        "query": lambda e: _resource(e, "question"),
        "sketch": sketch_of,
        "tags": lambda e: " ".join(e.tags) or None if e.type == "experience" else None,
        "sql": lambda e: _resource(e, "sql"),
        "comment_header": lambda e: comment_header(_resource(e, "sql")),
        "cot": lambda e: _resource(e, "cot"),
        "cot_profile": cot_profile,
        GENERAL_SERIALIZER: name_description,
    }
