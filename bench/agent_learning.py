"""How the almanac systems under benchmark learn beyond answering: the labeled and unlabeled
stream's ``observe``, the questions ``--learn-split --learn-unlabeled`` reveals without their
SQL, mining rounds (:mod:`bench.stream_mining`, with the unlabeled miner's vote and the
gate's pipelines), query synthesis and checked CoT.

:class:`AlmanacLearning` is a mixin of ``bench.agent_systems._AlmanacSystem``, which provides
what it uses: ``workspace`` (:class:`~bench.agent_workspace.AgentWorkspace`), ``llm``,
``_lock``, ``tiers()``, ``pipeline_options()`` and ``_confidence(database_name)``.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from tqdm import tqdm

from agents.answer import Answer
from agents.gate_pipeline import pipeline_factory
from agents.learn.cot import CotReport, CotWriter, cot_experiences, profile_cot
from agents.learn.gate import PipelineFactory
from agents.learn.mine.pairer import LLMPairer
from agents.learn.synth import (
    TRANSFORMS,
    QuestionWriter,
    SynthesisReport,
    SynthOptions,
    synthesis_sources,
    synthesize,
)
from agents.llm.base import LLM
from agents.pipeline import AskOptions, Pipeline
from bench.agent_workspace import AgentWorkspace
from bench.datasets import Example
from bench.stream_mining import MiningRound, StreamMiner, StreamMiningOptions
from bench.systems import Prediction
from ukf import BaseUKF, ExperienceUKF


class AlmanacLearning:
    """Learning, mining, synthesis and CoT of an almanac system (module docstring)."""

    workspace: AgentWorkspace
    llm: LLM
    _lock: threading.Lock
    miner: StreamMiner | None = None
    _vote_pipelines: dict[str, Pipeline]

    # provided by the system class (bench.agent_systems._AlmanacSystem)
    tiers: Callable[[], Any]
    pipeline_options: Callable[[], Any]
    pipeline: Callable[[Example], Pipeline]
    _confidence: Callable[..., Any]

    def enable_mining(self, options: StreamMiningOptions) -> None:
        """Mine what the stream stores, in rounds the runner asks for (:meth:`mine`)."""
        self.miner = StreamMiner(
            self.workspace.store,
            options,
            targets=lambda: dict(self.workspace.databases),
            pipeline_factory=self._gate_pipelines,
            embedder=self.workspace.embedder,
            vote_ask=self._vote,
            pairer=LLMPairer(self.llm) if options.llm_pairer else None,
        )

    def _vote(self, experience: ExperienceUKF, n: int) -> Answer:
        """The unlabeled miner's vote, as the server asks it (``server.mine_vote``): the
        experience's question asked again with ``n`` samples of the last tier, not logged."""
        name = next(iter(experience.tag_values("DATABASE")))
        with self._lock:
            if name not in self._vote_pipelines:
                self._vote_pipelines[name] = Pipeline(
                    store=self.workspace.store,
                    retriever=self.workspace.retriever,
                    database=self.workspace.databases[name],
                    database_name=name,
                    tiers=self.tiers()[-1:],
                    options=replace(self.pipeline_options(), log_questions=False),
                    confidence=self._confidence(name),
                )
            pipeline = self._vote_pipelines[name]
        return pipeline.ask(experience.question, experience.context, AskOptions(n=n))

    def synthesize(
        self,
        limit: int,
        *,
        per_source: int = 6,
        databases: set[str] | None = None,
        transforms: tuple[str, ...] = TRANSFORMS,
    ) -> dict[str, SynthesisReport]:
        """Up to ``limit`` synthetic pairs from the labeled experiences (the revealed
        examples) of ``databases`` (None: every prepared one), spread evenly over them (a
        database that yields fewer leaves its share to the next), by ``transforms``; each
        question written by the default model and back-checked by the chain as the
        unlabeled vote asks it (n = 1, not logged)."""
        store = self.workspace.store
        grouped: dict[str, list[ExperienceUKF]] = {}
        for source in synthesis_sources(store):
            name = next(iter(source.tag_values("DATABASE")), None)
            if name in self.workspace.databases and (databases is None or name in databases):
                grouped.setdefault(name, []).append(source)
        writer, reports, left = QuestionWriter(self.llm), {}, limit
        names = sorted(grouped)
        for index, name in enumerate(names):
            share = math.ceil(left / (len(names) - index))
            if share <= 0:
                break
            sources = grouped[name]
            desc = f"synthesizing {name} ({index + 1}/{len(names)}, up to {share} pairs)"
            with tqdm(total=len(sources), desc=desc, unit="source") as bar:
                reports[name] = synthesize(
                    store,
                    sources,
                    targets={name: self.workspace.databases[name]},
                    writer=writer,
                    ask=lambda draft: self._vote(draft, 1),
                    options=SynthOptions(limit=share, per_source=per_source, transforms=transforms),
                    progress=lambda done, _total: bar.update(done - bar.n),
                )
            left -= len(reports[name].stored_ids)
        self.workspace.indices.refresh()
        return reports

    def profile_cot(
        self,
        limit: int | None = None,
        asked: Sequence[Example] | None = None,
        *,
        with_knowledge: bool = False,
    ) -> CotReport:
        """Checked CoT for the labeled experiences of the prepared databases that have none,
        the default model as teacher (``limit``: ask about at most that many). With
        ``asked``, only the examples those questions retrieve (:meth:`examples_of`), most
        retrieved first: the prompts they get are those of a knowledge base whose every
        experience is explained, since only retrieved examples are shown. ``with_knowledge``:
        also show the teacher the knowledge behind filters a question does not name."""
        store, prepared = self.workspace.store, set(self.workspace.databases)
        if asked is None:
            experiences = [
                e for e in cot_experiences(store) if prepared & set(e.tag_values("DATABASE"))
            ]
        else:
            experiences = cot_experiences(store, ids=self.examples_of(asked))
        with tqdm(total=0, desc="explaining (CoT)", unit="sql") as bar:

            def step(done: int, total: int) -> None:
                bar.total = total
                bar.update(done - bar.n)

            report = profile_cot(
                store,
                experiences,
                CotWriter(self.llm),
                with_knowledge=with_knowledge,
                limit=limit,
                progress=step,
            )
        self.workspace.indices.refresh()
        return report

    def examples_of(self, asked: Sequence[Example]) -> list[str]:
        """The ids of the labeled experiences ``asked`` retrieve as their examples (the
        retrieval ``ask`` does, without exploring), the most often retrieved first."""
        counts: Counter[str] = Counter()
        for example in tqdm(asked, desc="retrieving examples", unit="q"):
            rag = self.pipeline(example).rag.run(example.question, explore=False)
            counts.update(e.id for e in rag.examples)
        return [ukf_id for ukf_id, _ in counts.most_common()]

    def mine(self, *, phase: str = "stream", after_question: int = 0) -> MiningRound | None:
        """One mining round over what was observed since the last (None: mining is off)."""
        if self.miner is None:
            return None
        return self.miner.mine(phase=phase, after_question=after_question)

    def _gate_pipelines(self, database_name: str) -> PipelineFactory:
        """The gate's pipelines on database ``database_name``, built as :meth:`pipeline`."""
        database = self.workspace.databases[database_name]
        return pipeline_factory(self.tiers(), database, database_name, self.pipeline_options())

    def observe(self, example: Example, prediction: Prediction, gold_revealed: bool) -> None:
        """Labeled: store the question with its gold SQL (a labeled experience). Unlabeled:
        nothing to store, the pipeline logged the question with the system's own SQL (an
        unlabeled experience, as the server logs it). Either is mined at the next mining
        round when mining is on."""
        experience: BaseUKF | None = None
        if gold_revealed:
            experience = self.workspace.learn(example, example.gold_sql[0])
        elif prediction.metadata.get("experience_id"):
            logged = self.workspace.store.get_many([prediction.metadata["experience_id"]])
            experience = next(iter(logged.values()), None)
        if self.miner is not None and isinstance(experience, ExperienceUKF):
            self.miner.observe(experience)

    def replay(self, example: Example, sql: str | None, gold_revealed: bool) -> None:
        """What answering ``example`` with ``sql`` taught, stored again (a resumed stream run,
        ``bench.run.Runner``): the question logged with that SQL as the pipeline logs it
        (without the answer's confidence signals, which the results do not keep), then
        :meth:`observe`."""
        pipeline = self.pipeline(example)
        metadata: dict[str, Any] = {}
        if pipeline.options.log_questions:
            _, metadata["experience_id"] = pipeline.experiences.record(
                example.question, example.context, sql=sql
            )
        self.observe(example, Prediction(sql=sql, metadata=metadata), gold_revealed)

    def learn_unlabeled(self, example: Example) -> None:
        """Reveal ``example``'s question without its SQL (``--learn-unlabeled``): stored as an
        unlabeled experience with no SQL (its gold is never read), to be mined at the next
        round by the vote alone, as an unlabeled stream's questions are (no greedy answer is
        paid for first: the vote's candidates include it)."""
        experience = self.workspace.log_question(example)
        if self.miner is not None:
            self.miner.observe(experience)
