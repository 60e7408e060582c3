"""``almanac init`` and ``almanac ask``: the agent chain from the command line.

    almanac init --db URL [--name NAME] [--pack FILE.jsonl] [--describe] [--no-warm]
        profile the database (optionally describe it with the default LLM), import a
        knowledge pack, build the indices, remember URL as the target for ``ask``, and warm
        the models: the prompt prefix every question shares (system prompt and schema) is
        prefilled once and kept in the prompt cache, so the first ``ask`` starts warm
    almanac ask "QUESTION" [--db URL] [--user-profile FILE.json] [--query-time T]
                [--n N] [--adaptive|--no-adaptive] [--no-abstain] [--cascade] [--explore]
                [--no-execute] [--max-rows N] [--json]

The target of ``ask`` is ``--db``, else ``ALMANAC_TARGET_URL``, else the database of the last
``init`` (``<data_dir>/target.json``).
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from server.settings import Settings, database_name_of

if TYPE_CHECKING:
    from ukf import QueryContext

AGENT_COMMANDS = frozenset({"init", "ask"})
TARGET_FILE = "target.json"


def add_agent_commands(commands: Any) -> None:
    init = commands.add_parser("init", help="profile a database and build its knowledge base")
    init.add_argument("--db", required=True, help="SQLAlchemy URL of the target database")
    init.add_argument("--name", help="its [DATABASE:...] name (default: from the URL)")
    init.add_argument("--pack", type=Path, help="a knowledge pack (UKF JSON Lines) to import")
    init.add_argument(
        "--describe", action="store_true", help="fill descriptions and synonyms with the LLM"
    )
    init.add_argument(
        "--no-warm",
        dest="warm",
        action="store_false",
        help="do not prefill the models' prompt cache with the schema",
    )
    ask = commands.add_parser("ask", help="answer a question with SQL and rows")
    ask.add_argument("question")
    ask.add_argument("--db", help="target database URL (default: the last init)")
    ask.add_argument("--name", help="its [DATABASE:...] name")
    ask.add_argument("--user-profile", type=Path, help="JSON file: the asker's profile")
    ask.add_argument("--query-time", help="ISO time the question is asked at")
    ask.add_argument("--n", type=int, default=1, help="candidates (majority vote when > 1)")
    ask.add_argument(
        "--adaptive",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="sample more only while unsure (default: the confidence settings, when --n is 1)",
    )
    ask.add_argument(
        "--no-abstain", action="store_true", help="always answer, however unsure (rows shown)"
    )
    ask.add_argument("--cascade", action="store_true", help="run the LLM tiers small to large")
    ask.add_argument("--no-execute", action="store_true", help="only write the SQL")
    ask.add_argument(
        "--explore", action="store_true", help="let the model search the knowledge base first"
    )
    ask.add_argument("--max-rows", type=int, default=20)
    ask.add_argument("--json", action="store_true", help="print the Answer as JSON")


def run_agent_command(args: argparse.Namespace, settings: Settings) -> int:
    if args.command == "init":
        return _init(args, settings)
    return _ask(args, settings)


def _target_name(url: str, name: str | None) -> str:
    return name or database_name_of(url)


def _init(args: argparse.Namespace, settings: Settings) -> int:
    from indices.index_set import IndexSet
    from kb.profile.profiler import profile_database
    from kb.store import KnowledgeStore
    from kb.target.database import Database
    from server.state import configured_embedder

    name = _target_name(args.db, args.name)
    describer = _describer(settings) if args.describe else None
    tiers = _load_tiers(settings) if args.warm else None
    with KnowledgeStore(settings.resolved_store_url) as store, Database(args.db) as database:
        report = profile_database(database, store, database_name=name, describer=describer)
        print(
            f"profiled {name}: {len(report.profile.tables)} tables, {len(report.added)} added, "
            f"{len(report.updated)} updated, {len(report.invalidated)} invalidated"
        )
        if args.pack:
            print(f"imported {store.import_jsonl(args.pack)} entries from {args.pack}")
        started = time.perf_counter()
        indices = IndexSet(
            store, configured_embedder(settings), retrieval=settings.retrieval.options()
        )
        summary = indices.rebuild()
        print(f"indices built in {time.perf_counter() - started:.1f} s: {summary}")
        if tiers is not None:
            try:
                loaded = tiers.result()
            except Exception as exc:  # warming saves time; the knowledge base is built
                print(f"not warmed: the model did not load: {exc}")
            else:
                _warm(_pipeline(store, database, name, indices, loaded))
    remember_target(settings.data_dir, args.db, name)
    print(f'ready: almanac ask "..." (target {name})')
    return 0


def _describer(settings: Settings) -> Any:
    from agents.learn.describe import LLMDescriber
    from server.llm_factory import LLMTiers
    from server.metrics import Metrics

    tiers = LLMTiers(settings.llm_tiers, settings.data_dir, Metrics())
    return LLMDescriber(tiers.get(settings.describe_tier))


def remember_target(data_dir: Path, url: str, name: str) -> None:
    """Make ``url`` (tagged ``name``) the database ``ask`` asks about by default."""
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / TARGET_FILE).write_text(json.dumps({"url": url, "name": name}))


def resolve_target(args: argparse.Namespace, settings: Settings) -> tuple[str, str]:
    """(url, name) of the database to ask about."""
    if args.db:
        return args.db, _target_name(args.db, args.name)
    if settings.target_url:
        return settings.target_url, settings.resolved_target_name or "target"
    remembered = settings.data_dir / TARGET_FILE
    if remembered.exists():
        target = json.loads(remembered.read_text())
        return target["url"], target["name"]
    raise ValueError("no target database: pass --db URL, set ALMANAC_TARGET_URL or run init")


def _load_tiers(settings: Settings) -> Future[list[Any]]:
    """The configured tiers (cascade order), loading in the background: a model takes
    seconds to map, the indices are built meanwhile."""
    from agents.pipeline import ModelTier
    from server.llm_factory import LLMTiers
    from server.metrics import Metrics

    tiers = LLMTiers(settings.llm_tiers, settings.data_dir, Metrics())
    names = settings.cascade_tiers or [tiers.default]
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="almanac-load-llm")
    loading = pool.submit(lambda: [ModelTier(n, tiers.get(n)) for n in names])
    pool.shutdown(wait=False)
    return loading


def _pipeline(
    store: Any,
    database: Any,
    name: str,
    indices: Any,
    tiers: list[Any],
    settings: Settings | None = None,
) -> Any:
    """The agent chain over ``database`` (its confidence as ``settings`` say, when given)."""
    from agents.pipeline import Pipeline
    from server.confidence import confidence_assessor

    assessor = None
    if settings is not None:
        assessor = confidence_assessor(settings, store, name, database.dialect)
    return Pipeline(
        store=store,
        retriever=indices.retriever,
        database=database,
        database_name=name,
        tiers=tiers,
        confidence=assessor,
    )


def _warm(pipeline: Any) -> None:
    from agents.warm import warm_pipeline

    report = warm_pipeline(pipeline)
    if report.error:
        print(f"warming failed (answers will be slower, not wrong): {report.error}")
    elif report.models:
        print(
            f"warmed {', '.join(report.models)}: {report.prompt_tokens} prompt tokens "
            f"in {report.seconds:.1f} s"
        )
    else:
        print("not warmed: the schema is sliced per question")


def _ask(args: argparse.Namespace, settings: Settings) -> int:
    from agents.pipeline import AskOptions
    from kb.store import KnowledgeStore
    from kb.target.database import Database
    from server.state import configured_indices

    url, name = resolve_target(args, settings)
    context = _query_context(args)
    options = AskOptions(
        n=args.n,
        cascade=args.cascade,
        execute=not args.no_execute,
        max_rows=args.max_rows,
        explore=args.explore or None,
        adaptive=args.adaptive,
        abstain=not args.no_abstain,
    )
    tiers = _load_tiers(settings)
    with KnowledgeStore(settings.resolved_store_url) as store, Database(url) as database:
        indices = configured_indices(store, settings)
        pipeline = _pipeline(store, database, name, indices, tiers.result(), settings)
        answer = pipeline.ask(args.question, context, options)
    if args.json:
        print(answer.model_dump_json(indent=2))
    else:
        print(format_answer(answer))
    return 0 if answer.error is None else 1


def _query_context(args: argparse.Namespace) -> QueryContext:
    """The question's context from ``--user-profile FILE.json`` and ``--query-time T``."""
    from pydantic import ValidationError

    from ukf import QueryContext

    profile = json.loads(args.user_profile.read_text()) if args.user_profile else {}
    try:
        return QueryContext(query_time=args.query_time, user_profile=profile)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ValueError(f"bad --query-time or --user-profile: {problems}") from None


def _abstention_lines(answer: Any) -> list[str]:
    """An unsure answer: why, what it would have returned, what to ask instead."""
    said = answer.abstention
    lines = ["UNSURE: " + "; ".join(said.reasons)]
    if answer.withheld_rows:
        lines.append(f"({answer.withheld_rows} rows withheld; --no-abstain shows them)")
    if said.clarification is not None:
        lines.append(said.clarification.question)
    if said.suggestions:
        lines.append("questions I can answer: " + " | ".join(said.suggestions))
    return lines


def format_answer(answer: Any) -> str:
    """The answer for a terminal: SQL, rows, confidence, knowledge and timings."""
    lines = [f"Q: {answer.question}", ""]
    lines += [answer.sql or "(no SQL)", ""]
    if answer.error:
        lines.append(f"error: {answer.error}")
    if answer.abstained and answer.abstention is not None:
        lines += _abstention_lines(answer)
    elif answer.executed:
        lines.append(" | ".join(answer.columns))
        lines += [" | ".join(str(v) for v in row) for row in answer.rows]
        more = " (truncated)" if answer.truncated else ""
        lines.append(f"({answer.row_count} rows{more})")
    vote = f"vote {answer.vote_share:.2f} of {answer.samples}" if answer.samples else "no vote"
    lines.append(
        f"confidence {answer.confidence:.2f} ({vote}), tier {answer.tier}, answer id {answer.id}"
    )
    if answer.knowledge:
        used = ", ".join(f"{k.type}:{k.name}" for k in answer.knowledge[:12])
        lines.append(f"knowledge: {used}")
    stages = ", ".join(f"{s.stage} {s.seconds:.2f}s" for s in answer.stages)
    lines.append(
        f"time {answer.seconds:.2f}s ({stages}); tokens {answer.prompt_tokens} prompt, "
        f"{answer.completion_tokens} completion"
    )
    return "\n".join(lines)
