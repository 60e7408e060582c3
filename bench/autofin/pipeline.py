"""The whole AutoFin build, step by step: tables → SQLite → planted facts (measured in the
SQLite file) → knowledge pack → profiles → questions (verified against the SQLite file) →
manifest, and PostgreSQL when a URL is given.

Every output is a pure function of the seed: no timestamps, no absolute paths, fixed orders.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from bench.autofin.data import build_tables
from bench.autofin.docs import documents
from bench.autofin.knowledge import knowledge_pack
from bench.autofin.planted import PLANTED_FILE, planted_facts
from bench.autofin.profiles import profiles
from bench.autofin.questions import TRAITS, build_questions
from bench.autofin.world import World
from bench.autofin.writer import load_postgres, write_sqlite
from bench.datasets import Example, write_jsonl
from kb.jsonl import write_jsonl as write_ukf_jsonl

logger = logging.getLogger(__name__)
T = TypeVar("T")

SQLITE_FILE = "autofin.sqlite"
KNOWLEDGE_DIR = "knowledge"
KNOWLEDGE_FILE = "knowledge.jsonl"
PROFILES_FILE = "profiles.json"
QUESTIONS_FILE = "questions.jsonl"
SPLIT_FILES = {"train": "train.jsonl", "test": "test.jsonl"}
MANIFEST_FILE = "manifest.json"


@dataclass
class Summary:
    """What a build wrote and how long each step took (seconds)."""

    out: Path
    seed: int
    timings: dict[str, float] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def total_seconds(self) -> float:
        return sum(seconds for step, seconds in self.timings.items() if step != "postgresql")


def generate(
    out: Path | str,
    *,
    seed: int = 7,
    pg_url: str | None = None,
    question_count: int = 480,
    progress: bool = True,
) -> Summary:
    """Builds every AutoFin output under ``out`` (created if needed; our files are replaced)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summary = Summary(out, seed)

    def step(name: str, work: Callable[[], T]) -> T:
        started = time.perf_counter()
        result = work()
        summary.timings[name] = time.perf_counter() - started
        logger.info("%s: %.2f s", name, summary.timings[name])
        return result

    world, tables = step("tables", lambda: build_tables(seed, progress=progress))
    step("sqlite", lambda: write_sqlite(tables, out / SQLITE_FILE, progress=progress))
    step("planted", lambda: _write_json(out / PLANTED_FILE, planted_facts(out / SQLITE_FILE, seed)))
    pack = step("knowledge", lambda: _write_knowledge(out))
    step("profiles", lambda: _write_json(out / PROFILES_FILE, profiles()))
    questions = step(
        "questions", lambda: _write_questions(out, world, seed, question_count, progress)
    )
    summary.manifest = _manifest(seed, tables, pack, questions)
    _write_json(out / MANIFEST_FILE, summary.manifest)
    if pg_url:
        step("postgresql", lambda: load_postgres(tables, pg_url, progress=progress))
    return summary


def _write_knowledge(out: Path) -> list:
    folder = out / KNOWLEDGE_DIR
    folder.mkdir(parents=True, exist_ok=True)
    texts = documents()
    for stale in folder.glob("*.md"):
        if stale.name not in texts:
            stale.unlink()
    for name, text in texts.items():
        (folder / name).write_text(text, encoding="utf-8", newline="\n")
    pack = knowledge_pack()
    write_ukf_jsonl(pack, out / KNOWLEDGE_FILE)
    return pack


def _write_questions(
    out: Path, world: World, seed: int, count: int, progress: bool
) -> list[Example]:
    questions = build_questions(out / SQLITE_FILE, world, seed=seed, count=count, progress=progress)
    write_jsonl(questions, out / QUESTIONS_FILE)
    for split, name in SPLIT_FILES.items():
        write_jsonl([q for q in questions if q.split == split], out / name)
    return questions


def _write_json(path: Path, data: Any) -> None:
    text = json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False)
    path.write_text(text + "\n", encoding="utf-8", newline="\n")


def _manifest(seed: int, tables: list, pack: list, questions: list) -> dict[str, Any]:
    traits = Counter(t for q in questions for t in q.tag_values("TRAIT"))
    return {
        "database": "autofin",
        "seed": seed,
        "files": {
            "sqlite": SQLITE_FILE,
            "knowledge": KNOWLEDGE_FILE,
            "documents": f"{KNOWLEDGE_DIR}/*.md",
            "profiles": PROFILES_FILE,
            "planted": PLANTED_FILE,
            "questions": QUESTIONS_FILE,
            **SPLIT_FILES,
        },
        "tables": {t.name: {"rows": t.row_count, "columns": len(t.columns)} for t in tables},
        "knowledge": dict(sorted(Counter(e.type for e in pack).items())),
        "questions": {
            "total": len(questions),
            "traits": {trait: traits[trait] for trait in TRAITS},
            "splits": dict(sorted(Counter(q.split for q in questions).items())),
            "difficulty": dict(sorted(Counter(q.difficulty for q in questions).items())),
            "templates": dict(sorted(Counter(q.metadata["template"] for q in questions).items())),
        },
    }
