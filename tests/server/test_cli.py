"""The ``almanac`` command line on real stores."""

import json

import pytest
from sqlalchemy import create_engine

from agents.llm.models import TEST_MODEL
from kb.store import KnowledgeStore
from server.auth import Identity, Role
from server.cli import main
from server.jobs import JobQueue
from tests.support.prebuilt import copy_demo
from tests.support.samples import every_template


@pytest.mark.slow  # the session's demo build (tests/conftest.py), shared with other tests
def test_demo_builds_autofin_creates_keys_and_queues_a_describe_job(demo_build, tmp_path, capsys):
    out = demo_build.output  # `almanac demo --no-serve` into a new data folder
    assert "Generating the AutoFin demo database" in out and "Profiling autofin.sqlite" in out
    assert "Queued a describe job" in out and "Authorization: Bearer " in out
    assert "http://127.0.0.1:8421/v1/ask" in out  # the server's default port
    assert "curl -s -X DELETE http://127.0.0.1:8421/v1/jobs/" in out  # how to cancel it
    assert (demo_build.folder / "autofin" / "autofin.sqlite").exists()
    data = copy_demo(demo_build, tmp_path / "data")  # what follows writes: into a copy
    engine = create_engine(f"sqlite:///{data / 'knowledge.db'}")
    (job,) = JobQueue(engine).list(state="queued", kind="describe")
    engine.dispose()
    submitter = Identity.from_dict(job.submitter)  # what the job runner reads: it must parse
    assert submitter.role is Role.OPS and submitter.user == "demo-ops"
    target = json.loads((data / "target.json").read_text())  # what `almanac ask` asks
    assert target["name"] == "autofin" and target["url"].endswith("autofin/autofin.sqlite")
    assert (
        main(
            [
                "--data-dir",
                str(data),
                "kb",
                "search",
                "--tag",
                "[TABLE:income_nova]",
                "--type",
                "table",
            ]
        )
        == 0
    )
    assert "income_nova" in capsys.readouterr().out
    store = KnowledgeStore(f"sqlite:///{data / 'knowledge.db'}")
    experiences = store.count(type="experience")
    assert experiences == 147  # AutoFin's train questions, labeled
    store.close()
    assert main(["--data-dir", str(data), "demo", "--no-serve"]) == 0  # reuses everything
    out = capsys.readouterr().out
    store = KnowledgeStore(f"sqlite:///{data / 'knowledge.db'}")
    assert store.count(type="experience") == experiences  # replaced, not duplicated
    store.close()
    assert "Profiling" not in out and "Queued a describe job" not in out
    assert "/v1/jobs/" in out  # the describe job still queued, still cancellable
    assert main(["--data-dir", str(data), "keys", "list"]) == 0
    assert capsys.readouterr().out.count("demo") >= 4


@pytest.mark.slow  # profiles Spider's concert_singer and asks the real model
def test_init_then_ask_with_the_embedded_model(tmp_path, capsys, monkeypatch):
    from tests.agents.conftest import spider_path

    monkeypatch.setenv("ALMANAC_LLM_TIERS", json.dumps([{"name": "default", "model": TEST_MODEL}]))
    monkeypatch.setenv("ALMANAC_EMBEDDER", "none")
    url = f"sqlite:///{spider_path('concert_singer')}"
    data = ["--data-dir", str(tmp_path)]
    assert main([*data, "init", "--db", url]) == 0
    out = capsys.readouterr().out
    assert "profiled concert_singer: 4 tables" in out and "warmed llama.cpp:" in out
    assert len(list((tmp_path / "prompt-cache").glob("*/*.state"))) == 1  # the schema, once
    assert main([*data, "ask", "How many singers do we have?"]) == 0
    out = capsys.readouterr().out
    assert (
        "count" in out.lower()
        and "\n6\n" in out
        and "confidence " in out
        and "(vote 1.00 of" in out
    )
    assert main([*data, "ask", "How many singers do we have?", "--json", "--no-execute"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert "singer" in answer["sql"].lower() and answer["executed"] is False
    assert main([*data, "--store-url", f"sqlite:///{tmp_path}/empty.db", "ask", " "]) == 2
    assert "question is empty" in capsys.readouterr().err


def test_ask_without_a_target_says_so(tmp_path, capsys):
    assert main(["--data-dir", str(tmp_path), "ask", "anything"]) == 2
    assert "no target database" in capsys.readouterr().err


def test_a_bad_query_time_or_profile_is_refused_before_anything_loads(tmp_path, capsys):
    target = ["--db", f"sqlite:///{tmp_path / 'none.db'}"]
    ask = ["--data-dir", str(tmp_path), "ask", "anything", *target]
    assert main([*ask, "--query-time", "last tuesday"]) == 2
    assert "--query-time" in capsys.readouterr().err
    profile = tmp_path / "profile.json"
    profile.write_text("{not json")
    assert main([*ask, "--user-profile", str(profile)]) == 2
    assert capsys.readouterr().err


@pytest.fixture()
def filled(tmp_path):
    with KnowledgeStore(f"sqlite:///{tmp_path / 'a' / 'knowledge.db'}") as store:
        store.upsert_many(every_template())
    return tmp_path / "a"


def test_export_then_import_into_another_store(filled, tmp_path, capsys):
    out_file = tmp_path / "kb.jsonl"
    assert main(["--data-dir", str(filled), "kb", "export", str(out_file)]) == 0
    assert main(["--data-dir", str(tmp_path / "b"), "kb", "import", str(out_file)]) == 0
    again = tmp_path / "again.jsonl"
    main(["--data-dir", str(tmp_path / "b"), "kb", "export", str(again)])
    assert again.read_bytes() == out_file.read_bytes()
    assert main(["--data-dir", str(tmp_path / "b"), "kb", "stats"]) == 0
    assert "12 active entries" in capsys.readouterr().out


def test_show_search_remove_and_purge(filled, capsys):
    entry = every_template()[3]
    assert main(["--data-dir", str(filled), "kb", "show", entry.id]) == 0
    assert "sales_ledger_nova" in capsys.readouterr().out
    assert main(["--data-dir", str(filled), "kb", "search", "--synonym-prefix", "nova"]) == 0
    assert entry.id in capsys.readouterr().out
    assert main(["--data-dir", str(filled), "kb", "remove", entry.id]) == 0
    assert main(["--data-dir", str(filled), "kb", "purge"]) == 0
    assert "purged 1" in capsys.readouterr().out


def test_errors_name_the_problem_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"type": "gizmo", "name": "x"}) + "\n")
    assert main(["--data-dir", str(tmp_path), "kb", "import", str(bad)]) == 2
    assert "line 1" in capsys.readouterr().err
    assert main(["--data-dir", str(tmp_path), "kb", "show", "nope"]) == 2
    assert "nope" in capsys.readouterr().err


def test_models_list_and_pull(tmp_path, capsys):
    assert main(["--data-dir", str(tmp_path), "models", "list"]) == 0
    out = capsys.readouterr().out
    assert "* qwen2.5-coder-1.5b" in out and "22/22 parts" in out
    assert main(["--data-dir", str(tmp_path), "models", "pull", "qwen2.5-coder-0.5b"]) == 0
    assert capsys.readouterr().out.strip().endswith("qwen2.5-coder-0.5b-instruct.gguf")
    assert main(["--data-dir", str(tmp_path), "models", "pull", "nope"]) == 2
    assert "unknown model" in capsys.readouterr().err


def test_the_demo_server_waits_longer_for_the_cpu_model(tmp_path, monkeypatch):
    from server.cli import demo_settings
    from server.settings import load_settings

    settings = demo_settings(load_settings(data_dir=tmp_path), tmp_path)
    assert settings.limits.request_timeout_s == 600.0 and settings.port == 8421
    assert settings.target_url == f"sqlite:///{tmp_path / 'autofin.sqlite'}"
    monkeypatch.setenv("ALMANAC_LIMITS__REQUEST_TIMEOUT_S", "90")
    monkeypatch.setenv("ALMANAC_PORT", "9000")
    settings = demo_settings(load_settings(data_dir=tmp_path), tmp_path)
    assert settings.limits.request_timeout_s == 90.0 and settings.port == 9000


def test_logging_keeps_the_faiss_loader_probe_quiet_but_its_warnings():
    import subprocess
    import sys
    from pathlib import Path

    script = (
        "from server.cli import configure_logging; configure_logging('INFO'); import faiss; "
        "import logging; logging.getLogger('faiss.loader').warning('a real problem')"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=root, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "ModuleNotFoundError" not in done.stderr and "AVX" not in done.stderr
    assert "WARNING faiss.loader: a real problem" in done.stderr
