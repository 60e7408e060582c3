"""What the benchmarks that ask share: an instant scripted model, a small target, their settings.

Used by ``perf.server_ask``, ``perf.server --flood N`` and ``perf.fuzz_target``:

- :class:`InstantOpenAI`: an OpenAI-compatible ``POST /v1/chat/completions`` handler that
  answers every chat completion at once with a fixed SQL query (:data:`SQL`);
  :func:`instant_llm` runs it on a loopback port in a daemon thread;
- :func:`sales_target`: a small SQLite target database (``sales``, 300 rows);
  :func:`profile_target` writes its Table/Column/Enum entries into a store;
- :func:`ask_env`: the ``ALMANAC_*`` settings that give a server that target and the instant
  model as its only LLM tier;
- :func:`stored_feedback`: labeled feedback experiences and feedback audit records in a store,
  to check that every feedback answered 200 was stored.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

from kb.profile.profiler import ProfileOptions, profile_database
from kb.store import KnowledgeStore
from kb.target.database import Database

SQL = "SELECT region, SUM(amount) FROM sales WHERE region = 'North' GROUP BY region"


class InstantOpenAI(BaseHTTPRequestHandler):
    """``POST /v1/chat/completions`` answered at once with ``reply``."""

    reply: ClassVar[str] = f"```sql\n-- Tables: sales\n-- Reasoning: scripted\n{SQL}\n```"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.dumps(
            {
                "id": "instant",
                "object": "chat.completion",
                "created": 0,
                "model": "instant",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": self.reply},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: Any) -> None:
        return


def instant_llm() -> ThreadingHTTPServer:
    """:class:`InstantOpenAI` serving on a free loopback port (``.server_port``) in a daemon
    thread; ``.shutdown()`` it when done."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), InstantOpenAI)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def sales_target(path: Path) -> str:
    """Create the ``sales`` table (300 rows) in a new SQLite file; returns its URL."""
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE sales (id INTEGER PRIMARY KEY, region TEXT, amount REAL)")
        conn.executemany(
            "INSERT INTO sales (region, amount) VALUES (?, ?)",
            [(("North", "South", "East")[i % 3], float(i)) for i in range(300)],
        )
    return f"sqlite:///{path}"


def profile_target(store: KnowledgeStore, target: str) -> None:
    """Profile the target into ``store`` as database ``sales``."""
    with Database(target) as database:
        profile_database(
            database, store, database_name="sales", options=ProfileOptions(progress=False)
        )


def ask_env(
    target: str, llm_port: int, *, concurrency: int, target_timeout: float
) -> dict[str, str]:
    """Settings for a server asking the instant model on ``llm_port`` about ``target``:
    LLM gate ``concurrency`` (queue four times that), target limit ``target_timeout`` s."""
    tiers = [
        {
            "name": "default",
            "backend": "openai",
            "model": "instant",
            "base_url": f"http://127.0.0.1:{llm_port}/v1",
            "max_concurrency": concurrency,
        }
    ]
    return {
        "ALMANAC_TARGET_URL": target,
        "ALMANAC_TARGET_NAME": "sales",
        "ALMANAC_TARGET_TIMEOUT_S": str(target_timeout),
        "ALMANAC_LLM_TIERS": json.dumps(tiers),
        "ALMANAC_LIMITS__LLM_CONCURRENCY": str(concurrency),
        "ALMANAC_LIMITS__LLM_QUEUE": str(concurrency * 4),
    }


def stored_feedback(store: KnowledgeStore, engine: Any) -> dict[str, int]:
    """Labeled experiences written by feedback, and feedback audit records, in the store."""
    from sqlalchemy import text

    experiences = sum(
        1
        for e in store.iterate(type="experience")
        if e.creator == "feedback" and e.content_resources.get("labeled")
    )
    with engine.connect() as conn:
        audit = conn.execute(
            text("SELECT count(*) FROM audit_log WHERE action = 'feedback'")
        ).scalar()
    return {"experiences": experiences, "audit": int(audit or 0)}
