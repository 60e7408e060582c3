"""NL-CoT-SQL training tuples from the verified experiences of a knowledge store.

``build_dataset`` turns every experience that can teach (:mod:`distill.sources`: human,
mined, synthetic) into a tuple:

- ``messages``: exactly the system and user messages the agent chain sends for the question
  at ask time (:class:`distill.prompts.ChainPrompts`: the same RAG agent and SQL writer, the
  experience itself held out of the retrieved examples), asked in the experience's context
  (query time, user profile);
- ``target``: the reply the chain asks its model for: a ```sql block with the CoT as its
  ``-- Reasoning:`` line (when one is stored) and the SQL; at ask time the chain opens the
  fence itself (``reply_prefix``), so the text after ```` ```sql\\n ```` is what is learned;
- the provenance (source, vote share, CoT check), the SQL skeleton, the curation score
  (:mod:`distill.curation`) and the split (:mod:`distill.split`).

Every target SQL is executed read-only on its database first; one that fails is dropped and
counted. The output folder holds ``train.jsonl``, ``validation.jsonl`` and ``manifest.json``
(:mod:`distill.manifest`).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from agents.learn.mine.unlabeled import VoteThresholds
from agents.pipeline_options import PipelineOptions
from distill.curation import CurationWeights, curate
from distill.dataset_files import MANIFEST, TRAIN, VALIDATION, EmptyDatasetError
from distill.manifest import Tokenizer, write_manifest
from distill.prompts import ChainPrompts
from distill.sources import TeachingExample, teaching_examples
from distill.split import SplitRule
from indices.experience_skeleton import sql_skeleton
from indices.retriever import Retriever
from kb.store import KnowledgeStore
from kb.target.database import Database

log = logging.getLogger(__name__)
Progress = Callable[[int, int], None]
"""Called with (experiences done, experiences in all) after each one; an exception it raises
(a job's cancellation check) stops the build before anything is written."""


@dataclass
class TrainingTuple:
    """One NL-CoT-SQL tuple (module docstring)."""

    id: str
    database: str
    source: str
    question: str
    context: dict[str, Any]
    messages: list[dict[str, str]]
    cot: str | None
    sql: str
    target: str
    skeleton: str
    vote_share: float | None = None
    cot_checked: bool | None = None
    score: dict[str, Any] = field(default_factory=dict)
    split: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, default=str)


@dataclass
class DatasetOptions:
    """What goes in and how it is split and curated.

    Attributes:
        databases: the databases to draw from (None: every database with a target).
        split: the train/validation rule.
        curation: the curation weights and threshold.
        hardness: experience id → the base student's BF-β on it (optional).
        pipeline: the chain's options (its RAG budgets shape the prompt).
        votes: when a mined question's vote is sure enough.
    """

    databases: list[str] | None = None
    split: SplitRule = field(default_factory=SplitRule)
    curation: CurationWeights = field(default_factory=CurationWeights)
    hardness: Mapping[str, float] = field(default_factory=dict)
    pipeline: PipelineOptions = field(default_factory=PipelineOptions)
    votes: VoteThresholds = field(default_factory=VoteThresholds)


def target_text(sql: str, cot: str | None) -> str:
    """The reply the chain asks for: a ```sql block, the CoT as its reasoning line."""
    reasoning = f"-- Reasoning: {cot}\n" if cot else ""
    return f"```sql\n{reasoning}{sql}\n```"


def build_tuples(
    store: KnowledgeStore,
    targets: Mapping[str, Database],
    retriever: Retriever | Callable[[], Retriever],
    options: DatasetOptions | None = None,
    *,
    counts: dict[str, int] | None = None,
    show_progress: bool = False,
    progress: Progress | None = None,
) -> list[TrainingTuple]:
    """The tuples, scored and split (kept and dropped alike; ``score["kept"]`` says which).

    ``targets``: database name → its read-only target. ``counts`` receives why experiences
    were dropped before scoring. ``progress`` is called after each experience (:data:`Progress`:
    raising from it stops the build)."""
    options = options or DatasetOptions()
    counts = counts if counts is not None else {}
    wanted = options.databases if options.databases is not None else list(targets)
    missing = sorted(set(wanted) - set(targets))
    if missing:
        raise ValueError(f"no target database for {missing}; known: {sorted(targets)}")
    examples = teaching_examples(store, wanted, options.votes)
    prompts = {
        name: ChainPrompts(store, name, targets[name].dialect, retriever, options.pipeline)
        for name in sorted({e.database for e in examples})
    }
    same_question: dict[tuple[str, str], list[str]] = {}
    for e in examples:
        key = (e.database, " ".join(e.question.lower().split()))
        same_question.setdefault(key, []).append(e.experience.id)
    tuples = []
    bar = tqdm(examples, desc="tuples", unit="q", disable=not show_progress)
    for done, example in enumerate(bar, 1):
        results = targets[example.database].execute(example.sql, max_rows=1)
        if results.ok:
            key = (example.database, " ".join(example.question.lower().split()))
            held_out = same_question[key]
            messages = prompts[example.database].messages(
                example.question.strip(), example.experience.context, held_out
            )
            tuples.append(_tuple(example, messages))
        else:
            counts["not_executable"] = counts.get("not_executable", 0) + 1
            log.info("dropped %s: its SQL failed: %s", example.experience.id, results.error)
        if progress is not None:
            progress(done, len(examples))
    scores = curate(tuples, options.curation, options.hardness)
    for t in tuples:
        t.score = scores[t.id].as_dict()
    train, validation = options.split.split(tuples)
    for t in train:
        t.split = "train"
    for t in validation:
        t.split = "validation"
    return tuples


def _tuple(example: TeachingExample, messages: list[dict[str, str]]) -> TrainingTuple:
    return TrainingTuple(
        id=example.experience.id,
        database=example.database,
        source=example.source,
        question=example.question.strip(),
        context=example.experience.context.record(),
        messages=[dict(m) for m in messages],
        cot=example.cot,
        sql=example.sql,
        target=target_text(example.sql, example.cot),
        skeleton=sql_skeleton(example.sql, example.dialect),
        vote_share=example.vote_share,
        cot_checked=example.cot_checked,
    )


def build_dataset(
    store: KnowledgeStore,
    targets: Mapping[str, Database],
    retriever: Retriever | Callable[[], Retriever],
    out_dir: Path,
    options: DatasetOptions | None = None,
    *,
    tokenizer: Tokenizer | None = None,
    show_progress: bool = False,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Write ``train.jsonl``, ``validation.jsonl`` (kept tuples) and ``manifest.json`` into
    ``out_dir`` (a new or empty folder, or an earlier dataset, replaced whole once the new one
    is written); return the manifest. :class:`EmptyDatasetError` when nothing is kept;
    ``ValueError`` when ``out_dir`` holds something else. ``progress`` (:data:`Progress`) is
    called after each experience; when it raises (a cancelled job), nothing is written and an
    earlier dataset in ``out_dir`` stays as it was."""
    options = options or DatasetOptions()
    if out_dir.exists() and any(out_dir.iterdir()) and not (out_dir / MANIFEST).is_file():
        raise ValueError(
            f"{out_dir}: exists and is no dataset folder (no {MANIFEST}); not replaced"
        )
    counts: dict[str, int] = {}
    tuples = build_tuples(
        store,
        targets,
        retriever,
        options,
        counts=counts,
        show_progress=show_progress,
        progress=progress,
    )
    kept = [t for t in tuples if t.score.get("kept")]
    if not kept:
        raise EmptyDatasetError(
            f"no training tuple from databases {options.databases or sorted(targets)}: "
            f"{len(tuples)} scored, none kept; dropped before scoring: {counts or 'none'}"
        )
    # written beside, then renamed over: a crash never leaves new tuples under an old manifest
    staging = out_dir.with_name(f".{out_dir.name}.partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        for name, split in ((TRAIN, "train"), (VALIDATION, "validation")):
            lines = [t.to_json() for t in kept if t.split == split]
            (staging / name).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
        manifest = write_manifest(
            staging / MANIFEST, store, tuples, options, dropped=counts, tokenizer=tokenizer
        )
        _replace_folder(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return manifest


def _replace_folder(new: Path, old: Path) -> None:
    """Put the folder ``new`` where ``old`` is (an earlier dataset there goes; the caller
    checked that ``old`` is empty or a dataset)."""
    if old.exists():
        retired = old.with_name(f".{old.name}.old-{os.getpid()}")
        old.rename(retired)
        new.rename(old)
        shutil.rmtree(retired, ignore_errors=True)
    else:
        old.parent.mkdir(parents=True, exist_ok=True)
        new.rename(old)
