"""What the server gives away: short refusals, no server paths, private store files.

Each test is a reproduction of issue 20 (items 5 and 6): a 500 from a lone surrogate or a
huge offset, 422 answers echoing the whole input, import errors naming the absolute import
folder, a store created 0644. (Health details and permission names are tested with their
routes: test_system_api.py, test_jobs_api.py.)
"""

from __future__ import annotations

import stat
from pathlib import Path

import numpy as np
import pytest

from indices.embedding_store import EmbeddingStore
from indices.embeddings import HashingEmbedder
from server.state import build_state
from tests.server.conftest import make_settings
from ukf import KnowledgeUKF

sqlite_store = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@sqlite_store
def test_a_lone_surrogate_is_a_short_422_not_a_500(server):
    body = b'{"question":"abc \\ud800 def"}'  # the escape itself, as raw bytes
    reply = server.request(
        "POST", "/v1/ask", "analyst", content=body, headers={"Content-Type": "application/json"}
    )
    assert reply.status_code == 422, reply.text
    assert "surrogate" in reply.json()["detail"] and len(reply.text) < 300
    search = server.request(
        "POST",
        "/v1/knowledge/search",
        "analyst",
        content=b'{"mode":"string","query":"x","limit":NaN}',
        headers={"Content-Type": "application/json"},
    )
    assert search.status_code == 422 and "NaN" in search.json()["detail"]
    assert server.request("GET", "/v1/knowledge", "analyst").status_code == 200  # still serving


@sqlite_store
def test_huge_integers_in_the_query_are_422_with_bounds(server):
    for query in ("offset=1000000000000000000000000000000", "limit=99999999999999999999"):
        reply = server.request("GET", f"/v1/knowledge?{query}", "analyst")
        assert reply.status_code == 422, (query, reply.text)
        assert reply.json()["detail"][0]["type"] == "less_than_equal"


@sqlite_store
def test_a_422_echoes_at_most_a_short_piece_of_the_input(server):
    long = "y" * 20_000
    body = {"mode": "string", "query": "x", "serializers": long, "direction": long}
    reply = server.request("POST", "/v1/knowledge/search", "analyst", json=body)
    assert reply.status_code == 422
    assert long not in reply.text and len(reply.text) < 2_000
    echoed = [error["input"] for error in reply.json()["detail"] if "input" in error]
    assert echoed and all(len(str(value)) < 200 for value in echoed)
    many = {f"field{i}": i for i in range(5_000)}  # 5,000 "extra field" errors
    reply = server.request("POST", "/v1/keys", "admin", json={"role": "ops", "user": "u", **many})
    assert reply.status_code == 422 and len(reply.json()["detail"]) <= 20


@sqlite_store
def test_import_errors_name_the_file_not_the_import_folder(server, tmp_path):
    folder = tmp_path / "imports"
    folder.mkdir()
    (folder / "bad.jsonl").write_text(KnowledgeUKF.create("a", "b").to_json() + "\n{oops\n")
    for params, words in (
        ({"path": "../outside.jsonl"}, "outside the import folder"),
        ({"path": "absent.jsonl"}, "no file 'absent.jsonl'"),
        ({"path": "bad.jsonl"}, "bad.jsonl, line 2"),
    ):
        submitted = server.request(
            "POST", "/v1/jobs", "ops", json={"kind": "import", "params": params}
        )
        job = server.wait_job(submitted.json()["id"])
        assert job["state"] == "failed" and words in job["error"], job["error"]
        assert str(tmp_path) not in job["error"]


def test_store_files_are_created_private(tmp_path):
    data_dir = tmp_path / "data"  # not there yet: created by the store
    settings = make_settings(data_dir, f"sqlite:///{data_dir / 'knowledge.db'}")
    state = build_state(settings, embedder=HashingEmbedder(), llms=None)
    try:
        state.store.upsert(KnowledgeUKF.create("a", "b"))
        assert _mode(data_dir) == 0o700
        for name in ("knowledge.db", "knowledge.db-wal", "knowledge.db-shm"):
            assert _mode(data_dir / name) == 0o600, name
    finally:
        state.close()
    vectors = EmbeddingStore(tmp_path / "cache" / "embeddings.sqlite", "m", 4)
    vectors.put_many(["a"], np.array([[0.0, 1.0, 0.0, 0.0]], dtype=np.float32))
    vectors.close()
    assert _mode(tmp_path / "cache" / "embeddings.sqlite") == 0o600
    assert _mode(tmp_path / "cache") == 0o700
