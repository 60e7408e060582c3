"""The LLM systems under benchmark; all use the same model.

- ``ddl-only``: the whole schema as DDL in the prompt, one greedy answer.
- ``vanna-style``: what today's most popular open-source tool does: the DDL, documentation and
  question-SQL pairs most similar to the question by embedding, one greedy answer.
- ``almanac``: the full chain (RAG -> SQL-gen -> refine -> vote), n = 1.
- ``almanac-tts``: the full chain with n = 5 and a majority vote.
- ``almanac-cascade``: the full chain with tiers 0.5B x 2 -> 1.5B.

An answer that drew several candidates also hands the runner each tier's greedy candidate
(refined, as a single draw would have answered before any plain-prompt fallback) as an
alternative, so the report shows what the vote won and lost against n = 1 on the same
questions.

Systems learn from the stream: with gold revealed (``--stream labeled``) the question and its
gold SQL become a labeled experience (almanac) or a training pair (vanna-style); without
(``--stream unlabeled``) almanac keeps what its pipeline logged: the question with its own
SQL, an unlabeled experience, as the server logs answered questions. With ``--mine-every N``
the almanac systems also mine those experiences into knowledge every N questions
(:mod:`bench.stream_mining`). How they learn, mine, synthesize and explain is
:mod:`bench.agent_learning`.
Options (``python -m bench run ... --model M --small-model M --llm-cache FILE``) choose the
models; see ``bench.agent_workspace.ModelChoice``.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from agents.answer import Answer, CandidateSummary
from agents.confidence.assess import (
    CalibratorSource,
    ConfidenceAssessor,
    ConfidenceOptions,
    packaged_calibrator,
)
from agents.confidence.calibrator import Calibrator
from agents.llm.base import LLM
from agents.pipeline import AskOptions, ModelTier, Pipeline, PipelineOptions
from agents.rag.agent import RagOptions
from agents.rag.schema_slice import SchemaCatalog
from agents.sql.generate import GenerateOptions, SqlGenerator, prompt_messages
from agents.sql.refine import RefineOptions
from bench.agent_learning import AlmanacLearning
from bench.agent_workspace import AgentWorkspace, ModelChoice, load_llm
from bench.datasets import Example
from bench.stream_mining import StreamMiner
from bench.systems import Prediction, register_system
from bench.vanna_style import VannaMemory
from indices.retriever import RetrievalOptions


def _choice(options: dict[str, Any]) -> ModelChoice:
    choice = ModelChoice()
    scalars = (
        "model",
        "small_model",
        "small_temperature",
        "small_max_tokens",
        "small_samples",
        "threads",
        "sequences",
    )
    for key in scalars:
        if options.get(key) is not None:
            setattr(choice, key, options[key])
    for key in ("data_dir", "llm_cache", "prompt_cache"):
        if options.get(key) is not None:
            setattr(choice, key, Path(options[key]))
    return choice


class _LLMSystem:
    name = "llm"

    def __init__(self, **options: Any) -> None:
        self.choice = _choice(options)
        self.workspace = AgentWorkspace(
            options.get("store_url"),
            options.get("embedder"),
            data_dictionary=bool(options.get("data_dictionary")),
            knowledge_pack=options.get("knowledge_pack", True),
            knowledge_files=tuple(Path(p) for p in options.get("knowledge") or ()),
            retrieval=RetrievalOptions(mined_by_facet=bool(options.get("mined_by_facet"))),
        )
        # a given ``llm`` (tests: a scripted model) replaces the default model
        self.llm: LLM = options.get("llm") or load_llm(self.choice.model, self.choice)
        # seconds one model call may take (bench run's --llm-timeout, default its --timeout)
        self.generate_options = GenerateOptions(
            timeout_s=options.get("llm_timeout", GenerateOptions.timeout_s)
        )
        self._lock = threading.Lock()

    def prepare(self, databases: dict[str, str]) -> None:
        """Profile every database up front and build the indices, so that question latency
        does not include knowledge-base construction."""
        for name, url in tqdm(sorted(databases.items()), desc="preparing databases", unit="db"):
            self.workspace.prepare(name, url)
        self.workspace.indices.refresh()

    def _metadata(self, candidate: Any) -> dict[str, Any]:
        return {
            "prompt_tokens": candidate.prompt_tokens,
            "completion_tokens": candidate.completion_tokens,
        }


@register_system("ddl-only")
class DDLOnlySystem(_LLMSystem):
    """The schema as DDL and the question; n = 1, no retrieval, no repair."""

    name = "ddl-only"

    def predict(self, example: Example, dialect: str) -> Prediction:
        self.workspace.database(example)
        schema = SchemaCatalog(self.workspace.store, example.database).render(
            examples=False, budget_tokens=1800, max_columns=200
        )
        messages = prompt_messages(
            "baseline_ddl.j2", dialect, schema=schema, question=example.question
        )
        candidate = SqlGenerator(self.llm, dialect, self.generate_options).sample(messages, 0)
        return Prediction(
            sql=candidate.sql or None, error=candidate.error, metadata=self._metadata(candidate)
        )


@register_system("vanna-style")
class VannaStyleSystem(_LLMSystem):
    """Top-k related DDL, documentation and question-SQL pairs by embedding; n = 1."""

    name = "vanna-style"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.memory = VannaMemory(self.workspace.store, self.workspace.embedder)

    def predict(self, example: Example, dialect: str) -> Prediction:
        self.workspace.database(example)
        related = self.memory.related(example.question, example.database)
        messages = prompt_messages(
            "baseline_vanna.j2",
            dialect,
            ddl=related.ddl,
            docs=related.docs,
            pairs=related.pairs,
            question=example.question,
        )
        candidate = SqlGenerator(self.llm, dialect, self.generate_options).sample(messages, 0)
        return Prediction(
            sql=candidate.sql or None, error=candidate.error, metadata=self._metadata(candidate)
        )

    def observe(self, example: Example, prediction: Prediction, gold_revealed: bool) -> None:
        if gold_revealed:
            self.memory.add_pair(example.database, example.question, example.gold_sql[0])


class _AlmanacSystem(AlmanacLearning, _LLMSystem):
    """The full chain; ``ask`` options set by the subclasses."""

    ask_options = AskOptions()
    tiers_needed = 1
    adaptive = False  # sample by confidence (agents.confidence), up to 5 samples

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.stable_schema = not options.get("sliced_schema")
        self.show_cot = bool(options.get("cot"))  # checked CoT beside the examples
        self.repair_all = bool(options.get("repair_all"))  # RefineOptions.repair_all
        # the answers' confidence: the calibrator of --calibrator, else the packaged one
        path = options.get("calibrator")
        self.calibrator = Calibrator.load(Path(path)) if path else packaged_calibrator()
        self.adaptive_target: float | None = options.get("adaptive_target")
        self.escalation_target: float | None = options.get("escalation_target")
        self.small = (
            load_llm(self.choice.small_model, self.choice) if self.tiers_needed > 1 else None
        )
        self.pipelines: dict[str, Pipeline] = {}
        self.miner: StreamMiner | None = None
        self._vote_pipelines: dict[str, Pipeline] = {}

    def tiers(self) -> list[ModelTier]:
        """The model tiers every pipeline of this system uses."""
        tiers = [ModelTier("default", self.llm)]
        if self.small is not None:
            small = ModelTier(
                "small",
                self.small,
                samples=self.choice.small_samples,
                temperature=self.choice.small_temperature,
                max_tokens=self.choice.small_max_tokens,
            )
            tiers.insert(0, small)
        return tiers

    def pipeline_options(self) -> PipelineOptions:
        return PipelineOptions(
            rag=RagOptions(stable_schema=self.stable_schema),
            generate=replace(self.generate_options, show_cot=self.show_cot),
            refine=RefineOptions(repair_all=self.repair_all),
        )

    def pipeline(self, example: Example) -> Pipeline:
        self.workspace.database(example)
        return self.pipeline_on(example.database)

    def pipeline_on(self, database_name: str) -> Pipeline:
        """The pipeline answering on prepared database ``database_name``."""
        database = self.workspace.databases[database_name]
        with self._lock:
            if database_name not in self.pipelines:
                self.pipelines[database_name] = Pipeline(
                    store=self.workspace.store,
                    retriever=self.workspace.retriever,
                    database=database,
                    database_name=database_name,
                    tiers=self.tiers(),
                    options=self.pipeline_options(),
                    confidence=self._confidence(database_name, adaptive=self.adaptive),
                )
            return self.pipelines[database_name]

    def _confidence(self, database_name: str, *, adaptive: bool = False) -> ConfidenceAssessor:
        """How this system's answers on ``database_name`` are assessed: its calibrator,
        never abstaining (the bench scores the SQL)."""
        return ConfidenceAssessor(
            self.workspace.store,
            database_name,
            dialect=self.workspace.databases[database_name].dialect,
            calibrators=CalibratorSource(fallback=self.calibrator),
            options=ConfidenceOptions(abstain_below=0.0, adaptive=adaptive, **self._targets()),
        )

    def _targets(self) -> dict[str, float]:
        """The adaptive targets given to this system (the rest keep the server's defaults)."""
        given = {"target": self.adaptive_target, "escalation_target": self.escalation_target}
        return {name: value for name, value in given.items() if value is not None}

    def predict(self, example: Example, dialect: str) -> Prediction:
        answer = self.pipeline(example).ask(example.question, example.context, self.ask_options)
        sql = answer.sql
        return Prediction(
            sql=sql,
            error=answer.error if sql is None else None,
            alternatives=greedy_alternatives(answer.candidates),
            metadata={
                "confidence": answer.confidence,
                "vote_share": answer.vote_share,
                "samples": answer.samples,
                "signals": answer.signals,
                "calibrator": answer.calibrator,
                "seconds": round(answer.seconds, 3),
                "tier": answer.tier,
                "prompt_tokens": answer.prompt_tokens,
                "completion_tokens": answer.completion_tokens,
                "stages": {s.stage: round(s.seconds, 3) for s in answer.stages},
                "adaptive": adaptive_checks(answer),
                "candidates": len(answer.candidates),
                "knowledge": len(answer.knowledge),
                "experience_id": answer.experience_id,
            },
        )


def adaptive_checks(answer: Answer) -> list[dict[str, float]] | None:
    """The adaptive stop rule's checks (:mod:`agents.adaptive_trace`), None without one."""
    generate = next((s for s in answer.stages if s.stage == "generate"), None)
    return generate.detail.get("adaptive") if generate is not None else None


def greedy_alternatives(candidates: list[CandidateSummary]) -> dict[str, str]:
    """Each tier's greedy candidate when the answer drew more than one: ``greedy`` for a
    single tier, ``greedy:<tier>`` in a cascade."""
    if len(candidates) < 2:
        return {}
    greedy: dict[str, str] = {}
    for candidate in candidates:
        if candidate.sample == 0 and not candidate.tier.endswith(":plain"):
            greedy.setdefault(candidate.tier, candidate.sql)
    if len(greedy) == 1:
        return {"greedy": next(iter(greedy.values()))}
    return {f"greedy:{tier}": sql for tier, sql in greedy.items()}


@register_system("almanac")
class AlmanacSystem(_AlmanacSystem):
    name = "almanac"


@register_system("almanac-tts")
class AlmanacTTSSystem(_AlmanacSystem):
    name = "almanac-tts"
    ask_options = AskOptions(n=5)


@register_system("almanac-adaptive")
class AlmanacAdaptiveSystem(_AlmanacSystem):
    """The greedy answer, then more samples only while its confidence is under the target
    (``ConfidenceOptions.target``, 0.1), up to five: the vote's accuracy where it is needed,
    greedy cost elsewhere (the server's default for questions that do not set ``n``)."""

    name = "almanac-adaptive"
    adaptive = True
    ask_options = AskOptions(adaptive=True)


@register_system("almanac-cascade")
class AlmanacCascadeSystem(_AlmanacSystem):
    """Small tier (two samples) then the default model: the small tier answers when its two
    samples agree on a non-empty result."""

    name = "almanac-cascade"
    ask_options = AskOptions(cascade=True)
    tiers_needed = 2


@register_system("almanac-cascade-adaptive")
class AlmanacAdaptiveCascadeSystem(_AlmanacSystem):
    """The server's default for cascade asks: each tier's greedy answer first, more samples
    and then the next tier only while the answer's calibrated confidence is under the target
    (``ConfidenceOptions.escalation_target`` for a tier before the last, 0.5; an agreement of
    two wrong small samples no longer settles it)."""

    name = "almanac-cascade-adaptive"
    adaptive = True
    ask_options = AskOptions(cascade=True, adaptive=True)
    tiers_needed = 2
