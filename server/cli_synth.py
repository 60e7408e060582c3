"""``almanac kb synthesize``: new verified question-SQL pairs from the verified experiences.

almanac kb synthesize [--limit N] [--per-source N] [--transform T ...] [--db URL]
                      [--name NAME] [--retry] [--json]
    Synthesizes pairs from the labeled and verified experiences of the target database
    (``--db``, else the configured or last ``init`` target): variants of their SQL (a filter,
    a grouping, a join, a time window added; the parts of a nested or multi-part query; a
    value swapped for another profiled one; ``--transform`` picks some), each run
    read-only, its question written by the describe (else default) LLM tier and answered
    again by the ask tiers' default model; a pair is stored only when that answer gives the
    variant's result (:mod:`agents.learn.synth`). ``--limit``: pairs stored at most;
    ``--per-source``: variants tried per experience (default 6); ``--retry``: try again
    what earlier runs dropped. A progress bar counts the experiences; the report gives, per
    transform, the variants generated, known, failed, degenerate, without a question,
    failing the back-check and stored (``--json``: the whole report).

The stored pairs are recorded in the audit log as made by ``cli:<login>``. Ctrl-C stops the
run: the pairs stored so far stay, and a run again goes on where it stopped.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from server.audit import cli_actor
from server.settings import Settings

if TYPE_CHECKING:
    from agents.learn.synth import SynthesisReport

SYNTHESIZE_ACTION = "synthesize"


def add_synthesize_command(kb_actions: Any) -> None:
    """Register ``synthesize`` under ``almanac kb``."""
    from agents.learn.synth import TRANSFORMS

    command = kb_actions.add_parser(
        SYNTHESIZE_ACTION, help="synthesize verified question-SQL pairs from the experiences"
    )
    command.add_argument("--limit", type=int, help="pairs stored at most")
    command.add_argument(
        "--per-source", type=int, default=6, help="variants tried per experience (default 6)"
    )
    command.add_argument(
        "--transform",
        action="append",
        choices=TRANSFORMS,
        help="a transform to apply (repeat it; default all)",
    )
    command.add_argument("--db", help="target database URL (default: the configured target)")
    command.add_argument("--name", help="its [DATABASE:...] name")
    command.add_argument("--retry", action="store_true", help="retry what earlier runs dropped")
    command.add_argument("--json", action="store_true", help="print the JSON report")


def llm_tiers(settings: Settings) -> tuple[Any, list[Any]]:
    """(the question writer's model, the ask tiers) from the settings' LLM tiers."""
    from agents.pipeline import ModelTier
    from server.llm_factory import LLMTiers
    from server.metrics import Metrics

    tiers = LLMTiers(settings.llm_tiers, settings.data_dir, Metrics())
    ask = [ModelTier(n, tiers.get(n)) for n in (settings.cascade_tiers or [tiers.default])]
    return tiers.get(settings.describe_tier), ask


def run_synthesize_command(args: argparse.Namespace, settings: Settings) -> int:
    from agents.learn.synth import SynthOptions

    try:
        options = SynthOptions(
            transforms=tuple(dict.fromkeys(args.transform or ())) or SynthOptions().transforms,
            per_source=args.per_source,
            limit=args.limit,
            retry=args.retry,
        )
    except ValueError as exc:
        print(f"error: {exc}")
        return 2
    from server.cli_agents import resolve_target

    try:
        url, name = resolve_target(args, settings)
    except ValueError as exc:
        print(f"error: {exc}")
        return 2
    report = _synthesize(args, settings, url, name, options)
    data = report.to_dict()
    print(json.dumps(data, indent=2, sort_keys=True) if args.json else _text(report))
    return 0


def _synthesize(
    args: argparse.Namespace, settings: Settings, url: str, name: str, options: Any
) -> SynthesisReport:
    from tqdm import tqdm

    from agents.learn.synth import QuestionWriter, synthesis_sources, synthesize
    from agents.pipeline_options import PipelineOptions
    from kb.store import KnowledgeStore
    from kb.target.database import Database
    from server.confidence import calibrator_source
    from server.mine_vote import vote_asker
    from server.state import configured_indices

    writer_llm, tiers = llm_tiers(settings)
    with KnowledgeStore(settings.resolved_store_url) as store:
        database = Database(url)
        try:
            retriever = configured_indices(store, settings).retriever()
            vote = vote_asker(
                tiers,
                store=store,
                retriever=retriever,
                database=database,
                database_name=name,
                options=PipelineOptions(
                    feedback_agreement=settings.feedback_agreement,
                    blame_threshold=settings.blame_threshold,
                ),
                calibrators=calibrator_source(settings),
            )
            sources = synthesis_sources(store, database=name)
            with tqdm(
                total=len(sources), desc="synthesizing", unit="experience", disable=args.json
            ) as bar:

                def step(done: int, _total: int) -> None:
                    bar.update(done - bar.n)

                report = synthesize(
                    store,
                    sources,
                    targets={name: database},
                    writer=QuestionWriter(writer_llm),
                    ask=lambda draft: vote(draft, 1),
                    options=options,
                    progress=step,
                )
        finally:
            database.close()
        if report.stored_ids:
            _audit(settings, store, report)
    return report


def _audit(settings: Settings, store: Any, report: SynthesisReport) -> None:
    from kb.engine import create_store_engine
    from server.audit import AuditLog

    engine = create_store_engine(settings.resolved_store_url)
    try:
        detail = {"by": cli_actor(), "stored": len(report.stored_ids)}
        AuditLog(engine).record(
            SYNTHESIZE_ACTION,
            None,
            report.stored_ids,
            store_version=store.version,
            detail=detail,
        )
    finally:
        engine.dispose()


def _text(report: SynthesisReport) -> str:
    lines = [report.summary()]
    for transform, row in sorted(report.to_dict()["by_transform"].items()):
        counts = ", ".join(f"{k} {v}" for k, v in row.items())
        lines.append(f"  {transform}: {counts}")
    for skipped, count in sorted(report.skipped.items()):
        lines.append(f"  skipped {count} experience(s): {skipped}")
    return "\n".join(lines)
