"""``almanac kb synthesize`` on concert_singer with a scripted LLM: the JSON report, the
text report with its progress bar, the audit, and a run again storing nothing twice (the
command is registered here as ``server.cli`` registers it)."""

from __future__ import annotations

import argparse
import json

from agents.learn.synth import synthetic_experiences
from agents.pipeline import ModelTier
from kb.engine import create_store_engine
from server.audit import AuditLog
from server.cli_synth import SYNTHESIZE_ACTION, add_synthesize_command, run_synthesize_command
from server.settings import load_settings
from tests.agents.learn.conftest import SPIDER, labeled, profiled
from tests.agents.scripted import ScriptedLLM
from tests.server.test_job_synthesize import NAMES, reply

DB = "concert_singer"


def almanac(argv: list[str], tmp_path, store_url: str) -> int:
    parser = argparse.ArgumentParser(prog="almanac")
    kb = parser.add_subparsers(dest="command").add_parser("kb")
    add_synthesize_command(kb.add_subparsers(dest="action"))
    settings = load_settings(data_dir=tmp_path, store_url=store_url)
    return run_synthesize_command(parser.parse_args(["kb", *argv]), settings)


def test_synthesize_from_the_command_line(tmp_path, capsys, monkeypatch):
    path = SPIDER / DB / f"{DB}.sqlite"
    store, database = profiled(tmp_path, path, DB)
    store.upsert(labeled(*NAMES, database=DB))
    llm = ScriptedLLM([reply])
    monkeypatch.setattr(
        "server.cli_synth.llm_tiers", lambda _s: (llm, [ModelTier("scripted", llm)])
    )
    monkeypatch.setenv("ALMANAC_EMBEDDER", "none")
    target = ["--db", f"sqlite:///{path}", "--name", DB]

    assert almanac(["synthesize", *target, "--limit", "2", "--json"], tmp_path, store.url) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["totals"]["stored"] == len(report["stored_ids"]) == 2
    assert report["limit_reached"] is True
    stored = synthetic_experiences(store, database=DB)
    assert sorted(e.id for e in stored) == sorted(report["stored_ids"])
    engine = create_store_engine(store.url)
    [audit] = AuditLog(engine).list(action=SYNTHESIZE_ACTION)
    engine.dispose()
    assert sorted(audit.ukf_ids) == sorted(report["stored_ids"])
    assert audit.detail["stored"] == 2 and audit.detail["by"].startswith("cli:")

    assert almanac(["synthesize", *target, "--transform", "vary"], tmp_path, store.url) == 0
    captured = capsys.readouterr()
    assert "synthesizing" in captured.err  # the progress bar
    assert captured.out.startswith("synthesis: 1 sources, 2 variants")
    assert "  vary: generated 2" in captured.out

    code = almanac(["synthesize", "--per-source", "0", *target], tmp_path, store.url)
    assert code == 2 and "per_source must be at least 1" in capsys.readouterr().out
    database.close()
    store.close()
