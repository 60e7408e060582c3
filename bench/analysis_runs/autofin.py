"""The long-form AutoFin questions (:mod:`bench.autofin.longform`) analysed on their AutoFin
database (``python -m bench analyze autofin --questions DIR/longform.jsonl ...``).

The database is prepared as ``almanac demo`` prepares it: profiled into the store as
``autofin``, the AutoFin knowledge pack imported (metrics such as gross margin, the glossary,
the business rules; ``knowledge.jsonl`` beside the SQLite file, else the pack itself), and the
build's train questions (``train.jsonl`` beside it, when there) stored as worked examples.

Each output line (:class:`LongformRecord`) is the analysis answer as JSON at the top level
(``short_answer``, ``findings``, ``caveats``, ``evidence``, ``plan``, ``refused``) with the
question's ``id``, ``question``, ``type`` (the benchmark's type; the analyst's own is in
``analysis.type``), ``reference`` and ``database``, so ``python -m bench.autofin
score-longform`` and ``python -m bench judge corgi|bibench|dbqa`` read the file as it is.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from pydantic import Field

from agents.analysis.models import AnalysisAnswer
from bench.analysis_runs.records import TaskRecord
from bench.analysis_runs.systems import AnalysisSystem, RunBounds
from bench.datasets.dataset import DatasetFormatError
from bench.judge.answers import read_json_lines

log = logging.getLogger(__name__)
DATABASE_NAME = "autofin"  # the name the knowledge pack's entries are tagged with
WORKED_EXAMPLES = "train.jsonl"


@dataclass(frozen=True)
class LongformQuestion:
    """One long-form AutoFin question: its text, type, reference answer, the planted fact a
    right answer names (``expects``) and the AutoFin SQLite file it is about."""

    id: str
    question: str
    type: str
    reference: str
    database: Path
    expects: dict[str, Any]


def read_longform(path: Path) -> list[LongformQuestion]:
    """The questions of a ``longform.jsonl``; :class:`DatasetFormatError` naming a bad line.
    A relative ``database`` is read from the file's folder."""
    questions = []
    for number, row in read_json_lines(path):
        for name in ("id", "question", "type", "database"):
            if not isinstance(row.get(name), str) or not row[name].strip():
                raise DatasetFormatError(path, "missing or not text", line=number, field=name)
        database = Path(row["database"])
        questions.append(
            LongformQuestion(
                id=row["id"],
                question=row["question"],
                type=row["type"],
                reference=str(row.get("reference") or ""),
                database=database if database.is_absolute() else path.parent / database,
                expects=dict(row.get("expects") or {}),
            )
        )
    return questions


class LongformRecord(TaskRecord):
    """A task record whose line is also an analysis answer the scorer and the judge read."""

    id: str = ""
    question: str = ""
    type: str = ""
    reference: str | None = None
    database: str | None = None
    short_answer: str = ""
    findings: list[dict[str, Any]] = Field(default_factory=list)
    caveats: list[str] = Field(default_factory=list)
    evidence: list[dict[str, Any]] = Field(default_factory=list)
    plan: dict[str, Any] | None = None
    refused: str | None = None

    @classmethod
    def answered(
        cls, task: LongformQuestion, system: str, answer: AnalysisAnswer, latency_s: float
    ) -> Self:
        base = TaskRecord.of(task.id, system, answer, latency_s).model_dump()
        dumped = base["analysis"]
        shown = {k: dumped[k] for k in ("findings", "caveats", "evidence", "plan", "refused")}
        return cls(**base, **_question_fields(task), short_answer=answer.short_answer, **shown)

    @classmethod
    def failed_on(cls, task: LongformQuestion, system: str, error: str, latency_s: float) -> Self:
        base = TaskRecord.failed(task.id, system, error, latency_s).model_dump()
        return cls(**base, **_question_fields(task))


def _question_fields(task: LongformQuestion) -> dict[str, Any]:
    return {
        "id": task.id,
        "question": task.question,
        "type": task.type,
        "reference": task.reference or None,
        "database": str(task.database),
    }


class AutoFinAnalysis:
    """Answers long-form AutoFin questions with an :class:`AnalysisSystem` on the AutoFin
    database prepared as the demo prepares it.

    Args:
        name: ``almanac-analysis`` or ``one-sql``.
        bounds: the analysis bounds.
        worked_examples: store the build's train questions as worked examples (the demo does).
        options: the bench's model options, as :class:`AnalysisSystem` takes them.
    """

    def __init__(
        self,
        name: str,
        bounds: RunBounds | None = None,
        *,
        worked_examples: bool = True,
        **options: Any,
    ) -> None:
        self.system = AnalysisSystem(name, bounds, **options)
        self.name = self.system.name
        self.worked_examples = worked_examples
        self._database: Path | None = None

    def prepare(self, database: Path) -> None:
        """Profile ``database`` and load its knowledge up front, so that the first
        question's latency does not include it (the run calls this; ``answer`` would)."""
        self._load_knowledge(database)
        self.system.almanac.prepare({DATABASE_NAME: f"sqlite:///{database}"})

    def answer(self, task: LongformQuestion) -> AnalysisAnswer:
        """The analysis of ``task``'s question on its AutoFin database."""
        if not task.database.is_file():
            raise FileNotFoundError(f"{task.id}: no AutoFin database at {task.database}")
        self._load_knowledge(task.database)
        return self.system.analyse(DATABASE_NAME, f"sqlite:///{task.database}", task.question)

    def _load_knowledge(self, database: Path) -> None:
        """The knowledge pack (and worked examples) into the store, once per run; the
        questions of one run are about one AutoFin build."""
        database = database.resolve()
        if self._database is not None:
            if database != self._database:
                raise ValueError(
                    f"one run answers on one AutoFin database: {database} after {self._database}"
                )
            return
        from bench.agent_workspace import KNOWLEDGE_PACK
        from bench.autofin.knowledge import knowledge_pack

        workspace = self.system.almanac.workspace
        if not (database.parent / KNOWLEDGE_PACK).exists():  # else prepare imports that file
            count = workspace.store.upsert_many(knowledge_pack())
            log.info("imported the AutoFin knowledge pack (%d entries)", count)
        examples = database.parent / WORKED_EXAMPLES
        if self.worked_examples and examples.exists():
            from bench.datasets.almanac_jsonl import read_jsonl

            learned = [workspace.learn(e, e.gold_sql[0]) for e in read_jsonl(examples)]
            log.info("stored %d worked examples from %s", len(learned), examples)
        self._database = database
