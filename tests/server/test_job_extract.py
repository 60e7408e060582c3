"""The ``extract`` job's runner: documents from the import folder, the report, the audit,
who may run it, and refused documents failing with nothing written (store on SQLite and
PostgreSQL). The kind is called directly (its registration lives in ``server.job_kinds``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agents.learn.documents import LLMSectionExtractor
from indices.string import StringIndex
from kb.documents import DocumentError
from server.access import AccessDeniedError
from server.auth import Identity, Role
from server.job_extract import ExtractParams, extract_job
from tests.agents.scripted import ScriptedLLM

HANDBOOK = """# Shop handbook

## Terms

Clients are the people in the customers table. Settled orders have status 'paid'.
"""
ANSWER = {
    "terms": [
        {"term": "clients", "aliases": ["clientele"], "meaning": "customers",
         "table": "customers", "column": ""},
    ],
    "metrics": [
        {"name": "order value", "aliases": [], "description": "", "formula": "SUM(orders.amount)"},
        {"name": "margin", "aliases": [], "description": "", "formula": "SUM(orders.margin)"},
    ],
    "rules": [],
    "value_mappings": [
        {"phrase": "settled", "table": "orders", "column": "status", "value": "paid"},
    ],
    "taxonomies": [],
}  # fmt: skip


class _Context:
    """What the runner uses of a JobContext: id, submitter, progress, log, cancellation."""

    def __init__(self, identity: Identity) -> None:
        self.job_id, self.submitter = "job-x", identity.to_dict()
        self.cancellation = None
        self.progress_calls: list[tuple[float | None, str | None]] = []
        self.lines: list[str] = []

    def progress(self, fraction: float | None, message: str | None = None) -> None:
        self.progress_calls.append((fraction, message))

    def log(self, line: str, level: str = "info") -> None:
        self.lines.append(line)


def _ops() -> Identity:
    return Identity("k-olga", Role.OPS, "olga")


@pytest.fixture
def shop(make_server, sqlite_target):
    server = make_server(target_url=sqlite_target, target_name="shop")
    reply = server.request("POST", "/v1/jobs", "ops", json={"kind": "profile", "params": {}})
    assert server.wait_job(reply.json()["id"])["state"] == "succeeded"
    folder = server.state.settings.resolved_import_dir
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "shop.md").write_text(HANDBOOK, encoding="utf-8")
    return server


def _run(server, params: dict[str, Any], identity: Identity | None = None):
    context = _Context(identity or _ops())
    llm = ScriptedLLM([json.dumps(ANSWER)])
    result = extract_job(server.state, context, ExtractParams(**params), LLMSectionExtractor(llm))  # type: ignore[arg-type]
    return result, context, llm


def test_the_job_extracts_reports_and_audits(shop):
    state = shop.state
    version = state.store.version
    dry, _, _ = _run(shop, {"paths": ["shop.md"], "dry_run": True})
    assert dry["merge"] == {"inserted": 4} and state.store.version == version

    result, context, llm = _run(shop, {"paths": ["shop.md"], "activate": True})
    assert len(llm.calls) == 1
    assert result["extracted"] == {"table_synonym": 2, "metric": 1, "value_synonym": 1}
    assert result["dropped"] == {"unknown_column": 1}
    assert len(result["activated_ids"]) == 4 and result["database"] == "shop"
    assert context.progress_calls[-1][0] == pytest.approx(0.95)
    assert "1 document(s)" in context.lines[0]
    audit = shop.request("GET", "/v1/audit", "admin", params={"action": "extract"}).json()
    item = audit["items"][0]
    assert item["job_id"] == "job-x" and item["entry_count"] == 4

    again, _, llm = _run(shop, {"paths": ["shop.md"]})
    assert llm.calls == [] and again["documents"][0]["status"] == "unchanged"


def test_refusals_name_the_file_and_write_nothing(shop):
    state = shop.state
    folder = state.settings.resolved_import_dir
    (folder / "empty.md").write_bytes(b"")
    (folder / "junk.pdf").write_bytes(bytes(range(256)) * 8)
    version = state.store.version
    for name, words in (("empty.md", "the file is empty"), ("junk.pdf", "not a PDF")):
        with pytest.raises(DocumentError, match=words) as raised:
            _run(shop, {"paths": ["shop.md", name]})
        assert name in str(raised.value)
    assert state.store.version == version
    with pytest.raises(ValueError, match="outside the import folder"):
        _run(shop, {"paths": ["../shop.md"]})
    scoped = Identity("k-sam", Role.OPS, "sam", "sales")
    with pytest.raises(AccessDeniedError):
        _run(shop, {"paths": ["shop.md"]}, scoped)
    assert state.store.version == version


def test_the_cli_command_extracts_and_refuses(tmp_path, sqlite_target, capsys):
    import argparse

    from kb.engine import create_store_engine
    from kb.profile.profiler import ProfileOptions, profile_database
    from kb.store import KnowledgeStore
    from kb.target.database import Database
    from server.audit import AuditLog
    from server.cli_extract import run_extract_command
    from server.settings import Settings

    url = f"sqlite:///{tmp_path / 'knowledge.db'}"
    with KnowledgeStore(url) as store:
        target = Database(sqlite_target)
        profile_database(
            target, store, database_name="shop", options=ProfileOptions(progress=False)
        )
        target.close()
    settings = Settings(data_dir=tmp_path, store_url=url, target_name="shop", embedder="none")
    document = tmp_path / "shop.md"
    document.write_text(HANDBOOK, encoding="utf-8")

    def args(*files, **flags):
        options = {"database": None, "dry_run": False, "activate": False, "json": True}
        options |= {"no_llm": False, "skip_covered_tables": False, **flags}
        return argparse.Namespace(files=list(files), **options)

    extractor = LLMSectionExtractor(ScriptedLLM([json.dumps(ANSWER)]))
    assert run_extract_command(args(document), settings, extractor=extractor) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["merge"] == {"inserted": 4} and report["database"] == "shop"
    engine = create_store_engine(url)
    audit = AuditLog(engine).list(action="extract")
    engine.dispose()
    assert audit and audit[0].entry_count == 4 and audit[0].detail["by"].startswith("cli:")
    empty = tmp_path / "empty.md"
    empty.write_bytes(b"")
    assert run_extract_command(args(document, empty), settings, extractor=extractor) == 2
    assert f"{empty}: the file is empty" in capsys.readouterr().err


STATUSES = """# Order statuses

| status | meaning | also called |
|---|---|---|
| paid | the customer paid | settled, cleared |
| void | cancelled before payment | voided |
"""


def test_the_table_pass_alone_needs_no_model(tmp_path, sqlite_target, capsys):
    # --no-llm: rows keyed by a stored value give synonyms; no model is loaded (none is set up)
    import argparse

    from kb.profile.profiler import ProfileOptions, profile_database
    from kb.store import KnowledgeStore
    from kb.target.database import Database
    from server.cli_extract import run_extract_command
    from server.settings import Settings

    url = f"sqlite:///{tmp_path / 'knowledge.db'}"
    with KnowledgeStore(url) as store:
        target = Database(sqlite_target)
        profile_database(
            target, store, database_name="shop", options=ProfileOptions(progress=False)
        )
        target.close()
    settings = Settings(  # with the target: values that are no enum are checked on it
        data_dir=tmp_path,
        store_url=url,
        target_url=sqlite_target,
        target_name="shop",
        embedder="none",
    )
    document = tmp_path / "statuses.md"
    document.write_text(STATUSES, encoding="utf-8")
    flags = {"database": None, "dry_run": False, "json": True, "skip_covered_tables": False}
    args = argparse.Namespace(files=[document], activate=True, no_llm=True, **flags)
    assert run_extract_command(args, settings) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["merge"]["inserted"] >= 2, report
    with KnowledgeStore(url) as store:
        index = StringIndex.from_store(store)
        for phrase, value in (("settled", "paid"), ("cleared", "paid"), ("voided", "void")):
            hits = [m for m in index.search(f"{phrase} orders", mode="longest") if m.text == phrase]
            assert hits, phrase
            found = store.get(hits[0].ukf_ids[0])
            assert found.content_resources["value"] == value, found


def test_the_job_runs_the_table_pass_alone_on_a_server_without_a_model(shop):
    from server.job_extract import run_extract

    folder = shop.state.settings.resolved_import_dir
    (folder / "statuses.md").write_text(STATUSES, encoding="utf-8")
    assert shop.state.llms is None
    params = ExtractParams(paths=["statuses.md"], no_llm=True, activate=True)
    result = run_extract(shop.state, _Context(_ops()), params)  # type: ignore[arg-type]
    assert result["merge"]["inserted"] >= 2 and not result.get("failed_parts"), result
    with pytest.raises(RuntimeError, match="no LLM"):
        run_extract(shop.state, _Context(_ops()), ExtractParams(paths=["shop.md"]))  # type: ignore[arg-type]


def test_extract_refusal_names_the_missing_model_and_the_way_out(shop):
    from server.job_extract import extract_refusal

    assert shop.state.llms is None
    refused = extract_refusal(shop.state, ExtractParams(paths=["shop.md"]))
    assert refused is not None and "no LLM is configured" in refused and "no_llm" in refused
    assert extract_refusal(shop.state, ExtractParams(paths=["shop.md"], no_llm=True)) is None


def test_submitting_without_no_llm_to_a_server_without_a_model_is_refused_at_once(shop):
    params = {"paths": ["shop.md"]}
    reply = shop.request("POST", "/v1/jobs", "ops", json={"kind": "extract", "params": params})
    assert reply.status_code == 409, reply.text
    assert "no LLM is configured" in reply.text and "no_llm: true" in reply.text
    assert shop.state.jobs.list(kind="extract") == []  # nothing queued
    params = {"paths": ["shop.md"], "no_llm": True}
    reply = shop.request("POST", "/v1/jobs", "ops", json={"kind": "extract", "params": params})
    assert reply.status_code == 202, reply.text
