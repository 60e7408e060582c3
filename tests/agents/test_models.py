"""Packaged models: assembled from PyPI parts, verified by SHA-256, cached, never downloaded."""

import dataclasses
import hashlib
import re

import pytest

from agents.llm.models import MODELS, TEST_MODEL, ModelError, describe, is_cached, pull


def _sha256(path):
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 24):
            digest.update(chunk)
    return digest.hexdigest()


def test_the_test_profile_assembles_verifies_and_is_cached(tmp_path):
    path = pull(TEST_MODEL, tmp_path, progress=False)
    model = MODELS[TEST_MODEL]
    assert path.stat().st_size == model.size
    assert _sha256(path) == model.sha256 and model.sha256.startswith("1d961463")
    assert path.read_bytes()[:4] == b"GGUF"
    mtime = path.stat().st_mtime_ns
    assert pull(TEST_MODEL, tmp_path, progress=False) == path  # cached: not rebuilt
    assert path.stat().st_mtime_ns == mtime
    assert not list(path.parent.glob("*.partial-*"))


def test_a_corrupted_cache_is_detected_and_rebuilt(tmp_path):
    path = pull(TEST_MODEL, tmp_path, progress=False)
    with path.open("r+b") as handle:
        handle.seek(1000)
        handle.write(b"\x00" * 16)
    assert is_cached(MODELS[TEST_MODEL], tmp_path)  # size and sidecar still agree ...
    pull(TEST_MODEL, tmp_path, verify=True, progress=False)  # ... a verified pull re-hashes
    assert _sha256(path) == MODELS[TEST_MODEL].sha256


def test_wrong_checksums_and_missing_parts_fail_clearly_and_leave_nothing(tmp_path, monkeypatch):
    bad = dataclasses.replace(MODELS[TEST_MODEL], name="bad", sha256="0" * 64)
    monkeypatch.setitem(MODELS, "bad", bad)
    with pytest.raises(ModelError, match="sha256"):
        pull("bad", tmp_path, progress=False)
    assert not list((tmp_path / "models").iterdir())
    ghost = dataclasses.replace(bad, name="ghost", distribution="no-such-model-part")
    monkeypatch.setitem(MODELS, "ghost", ghost)
    with pytest.raises(ModelError, match=re.escape("pip install no-such-model-part1==0.9.0")):
        pull("ghost", tmp_path, progress=False)
    with pytest.raises(ModelError, match="unknown model 'nope'"):
        pull("nope", tmp_path)


def test_describe_lists_every_packaged_model(tmp_path):
    rows = {row["name"]: row for row in describe(tmp_path)}
    assert set(rows) == {"qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"}
    assert rows["qwen2.5-coder-1.5b"]["default"] and rows["qwen2.5-coder-1.5b"]["parts"] == 22
    assert rows["qwen2.5-coder-1.5b"]["parts_installed"] == 22
    assert MODELS["qwen2.5-coder-1.5b"].sha256.startswith("cc324af0")
