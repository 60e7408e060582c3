"""Registered students (``almanac distill register|list``) and the ``student`` tier backend:
the manifest, the SHA-256 check before a tier loads, a corrupted or unknown student refused
with a message naming it. The GGUF here is a stand-in file: every check happens before
llama.cpp would read it (the tiny trained student runs in ``test_student_tier.py``)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from distill.registry import (
    StudentError,
    get_student,
    list_students,
    register,
    verified_student,
)
from server.llm_factory import LLMTiers
from server.metrics import Metrics
from server.settings import LLMTierSettings, Settings
from server.state import build_state
from tests.distill.test_cli_jobs import parse

PAYLOAD = b"GGUF" + bytes(range(256)) * 64


def fake_run(root: Path, payload: bytes = PAYLOAD) -> Path:
    """A training run directory as ``train`` and ``export`` leave it (config, dataset
    manifest, metrics, ``export.json`` naming the GGUF), with ``payload`` as the GGUF."""
    run = root / "run-7"
    base = root / "base"
    (run / "export").mkdir(parents=True)
    base.mkdir()
    (base / "almanac-source.json").write_text(json.dumps({"model": "qwen2.5-coder-0.5b"}))
    config = {"base_model": str(base), "data": str(root / "data"), "full_finetune": False}
    (run / "config.json").write_text(json.dumps(config))
    (run / "manifest.json").write_text(json.dumps({"store": {"hash": "abc123"}}))
    (run / "metrics.jsonl").write_text('{"event": "start"}\n')
    gguf = run / "export" / "student.gguf"
    gguf.write_bytes(payload)
    record = {"gguf": str(gguf), "adapter": str(run / "final"), "dtype": "f16"}
    (run / "export.json").write_text(json.dumps(record))
    return run


def student_tier(name: str = "student", model: str = "s1") -> LLMTierSettings:
    return LLMTierSettings(name=name, backend="student", model=model, n_threads=1)


def test_register_copies_the_gguf_with_its_manifest(tmp_path):
    run = fake_run(tmp_path)
    student = register(run, tmp_path / "data", name="s1")
    assert student.gguf == tmp_path / "data" / "models" / "students" / "s1" / "student.gguf"
    assert student.gguf.read_bytes() == PAYLOAD
    manifest = json.loads((student.folder / "manifest.json").read_text())
    assert manifest["sha256"] == hashlib.sha256(PAYLOAD).hexdigest()
    assert manifest["size"] == len(PAYLOAD)
    assert manifest["base_model"]["model"] == "qwen2.5-coder-0.5b"
    assert manifest["run"]["id"] == "run-7" and manifest["export"]["dtype"] == "f16"
    expected = hashlib.sha256((run / "manifest.json").read_bytes()).hexdigest()
    assert manifest["dataset"]["manifest_sha256"] == expected
    assert manifest["dataset"]["store_hash"] == "abc123" and manifest["created_at"]
    assert [s.name for s in list_students(tmp_path / "data")] == ["s1"]
    assert verified_student(tmp_path / "data", "s1") == student.gguf
    # the name defaults to the run's, and a name is not silently overwritten
    assert register(run, tmp_path / "data").name == "run-7"
    with pytest.raises(StudentError, match=r"already registered.*--replace"):
        register(run, tmp_path / "data", name="s1")
    assert register(run, tmp_path / "data", name="s1", replace=True).name == "s1"
    with pytest.raises(StudentError, match=r"student name '\.\./x'"):
        register(run, tmp_path / "data", name="../x")


def test_a_corrupted_student_is_refused_when_its_tier_loads(tmp_path):
    data = tmp_path / "data"
    student = register(fake_run(tmp_path), data, name="s1")
    tiers = LLMTiers([student_tier()], data, Metrics())
    flipped = bytearray(PAYLOAD)
    flipped[100] ^= 0xFF
    student.gguf.write_bytes(bytes(flipped))  # same size: only the hash tells
    with pytest.raises(StudentError) as error:
        tiers.get("student")
    message = str(error.value)
    assert "tier 'student'" in message and "student 's1'" in message
    assert "corrupted" in message and str(student.gguf) in message and "--replace" in message
    student.gguf.write_bytes(PAYLOAD[:-10])
    with pytest.raises(StudentError, match=r"has \d+ bytes, its manifest says \d+"):
        tiers.get("student")
    student.gguf.unlink()
    with pytest.raises(StudentError, match="is missing"):
        tiers.get("student")


def test_an_unknown_student_is_refused_at_start(tmp_path, monkeypatch):
    monkeypatch.setenv("ALMANAC_CONFIG", str(tmp_path / "absent.toml"))
    with pytest.raises(StudentError, match=r"tier 'student': no student 'nope' is registered"):
        LLMTiers([student_tier(model="nope")], tmp_path, Metrics())
    settings = Settings(
        data_dir=tmp_path,
        embedder="none",
        warm_on_start=False,
        llm_tiers=[LLMTierSettings(), student_tier(model="nope")],
        cascade_tiers=["student", "default"],
    )
    with pytest.raises(StudentError, match="almanac distill register RUN --name nope"):
        build_state(settings)


def test_settings_check_the_student_tier(tmp_path):
    with pytest.raises(ValidationError, match="backend 'student' needs 'model'"):
        LLMTierSettings(name="s", backend="student")
    with pytest.raises(ValidationError, match=r"tier 's': student name 'a/b'"):
        LLMTierSettings(name="s", backend="student", model="a/b")
    tier = LLMTierSettings(name="s", backend="student", model="tiny-1")
    assert tier.model == "tiny-1"


def test_the_cli_registers_lists_and_verifies(tmp_path, capsys, monkeypatch):
    from server.cli_distill import run_distill_command

    monkeypatch.setenv("ALMANAC_CONFIG", str(tmp_path / "absent.toml"))
    settings = Settings(data_dir=tmp_path / "data")
    run = fake_run(tmp_path)
    assert run_distill_command(parse(["distill", "list"]), settings) == 0
    assert "no students registered" in capsys.readouterr().out
    argv = ["distill", "register", str(run), "--name", "s1", "--link"]
    assert run_distill_command(parse(argv), settings) == 0
    printed = capsys.readouterr().out
    assert "registered student 's1'" in printed and 'model = "s1"' in printed
    assert run_distill_command(parse(argv), settings) == 2
    assert "already registered" in capsys.readouterr().out
    assert run_distill_command(parse(["distill", "list", "--verify"]), settings) == 0
    line = capsys.readouterr().out
    assert line.startswith("s1 ") and "run-7" in line and "verified" in line
    get_student(settings.data_dir, "s1").gguf.write_bytes(b"x" * len(PAYLOAD))
    assert run_distill_command(parse(["distill", "list", "--verify"]), settings) == 1
    assert "CORRUPT" in capsys.readouterr().out
    # an unreadable manifest is one line of the list, not the end of it
    register(fake_run(tmp_path / "other"), settings.data_dir, name="a0")
    (get_student(settings.data_dir, "a0").folder / "manifest.json").write_text("{not json")
    assert run_distill_command(parse(["distill", "list"]), settings) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("a0 ") and "UNREADABLE" in lines[0] and "manifest.json" in lines[0]
    assert lines[1].startswith("s1 ")
    assert [s.name for s in list_students(settings.data_dir)] == ["a0", "s1"]


def test_register_refuses_a_run_without_an_export(tmp_path):
    run = fake_run(tmp_path)
    (run / "export.json").unlink()
    (run / "export" / "student.gguf").unlink()
    with pytest.raises(ValueError, match="has no exported GGUF"):
        register(run, tmp_path / "data", name="s1")


class StandInLLM:
    """In place of llama.cpp: records the path it was asked to load; ``before_load`` runs
    first (what another process does to the file between the hash and the load)."""

    before_load = staticmethod(lambda path: None)

    def __init__(self, model_path: str, **_options) -> None:
        StandInLLM.before_load(Path(model_path))
        self.model_path = model_path


def swap(path: Path, payload: bytes) -> None:
    """Replace ``path`` by another file (a new inode), as an atomic re-registration would."""
    other = path.with_name("other.gguf")
    other.write_bytes(payload)
    other.replace(path)


def test_the_loaded_gguf_is_the_one_verified(tmp_path, monkeypatch):
    import server.llm_factory as factory
    from server.llm_factory import build_backend

    data = tmp_path / "data"
    student = register(fake_run(tmp_path), data, name="s1")
    tier = student_tier().model_copy(update={"prompt_cache_mb": 0})
    monkeypatch.setattr(factory, "LlamaCppLLM", StandInLLM)
    assert build_backend(tier, data).model_path == str(student.gguf)  # unchanged: loaded

    # swapped after the hash, before llama.cpp opens it: refused, not served unverified
    monkeypatch.setattr(StandInLLM, "before_load", staticmethod(lambda p: swap(p, b"evil")))
    with pytest.raises(StudentError, match=r"tier 'student'.*changed after its sha256"):
        build_backend(tier, data)

    # swapped while it is hashed (the hash read the old file): refused too
    swap(student.gguf, PAYLOAD)
    monkeypatch.setattr(StandInLLM, "before_load", staticmethod(lambda p: None))
    import distill.registry as registry

    real = registry.file_sha256

    def hash_then_swap(path: Path) -> str:
        digest = real(path)
        swap(path, b"evil" + PAYLOAD[4:])  # same size
        return digest

    monkeypatch.setattr(registry, "file_sha256", hash_then_swap)
    with pytest.raises(StudentError, match="changed after its sha256"):
        build_backend(tier, data)


def test_export_register_replaces_a_student_only_when_asked(tmp_path, capsys, monkeypatch):
    """``distill export --register NAME`` registers as ``register`` does: an existing student
    of that name (perhaps the one a tier serves) is not overwritten without ``--replace``."""
    import distill.export
    from server.cli_distill import run_distill_command

    monkeypatch.setenv("ALMANAC_CONFIG", str(tmp_path / "absent.toml"))
    settings = Settings(data_dir=tmp_path / "data")
    run = fake_run(tmp_path)
    served = register(run, settings.data_dir, name="prod")
    fresh = tmp_path / "fresh" / "student.gguf"

    def stand_in_export(adapter, base, out, *, dtype, quantize=None):  # merge, GGUF writing
        fresh.parent.mkdir(exist_ok=True)
        fresh.write_bytes(b"GGUF new weights")
        return fresh

    monkeypatch.setattr(distill.export, "export", stand_in_export)
    argv = ["distill", "export", str(run / "final"), "--base", str(tmp_path / "base")]
    argv += ["--out", str(fresh.parent), "--register", "prod"]
    assert run_distill_command(parse(argv), settings) == 2
    assert "already registered" in capsys.readouterr().out
    assert served.gguf.read_bytes() == PAYLOAD  # the served student is untouched
    assert verified_student(settings.data_dir, "prod") == served.gguf
    assert run_distill_command(parse([*argv, "--replace"]), settings) == 0
    assert served.gguf.read_bytes() == b"GGUF new weights"


def test_exporting_again_leaves_a_linked_student_whole(tmp_path, capsys, monkeypatch):
    """A student registered with ``--link`` shares the run's exported file; exporting the run
    again into the same folder (the GGUF writer truncates and rewrites its file) writes a new
    file and leaves the registered one as it was verified."""
    import distill.export
    from server.cli_distill import run_distill_command

    monkeypatch.setenv("ALMANAC_CONFIG", str(tmp_path / "absent.toml"))
    settings = Settings(data_dir=tmp_path / "data")
    run = fake_run(tmp_path)
    assert run_distill_command(parse(["distill", "register", str(run), "--link"]), settings) == 0
    student = get_student(settings.data_dir, "run-7")
    assert student.gguf.samefile(run / "export" / "student.gguf")  # linked, not copied

    def in_place_export(adapter, base, out, *, dtype, quantize=None):  # as GGUFWriter writes
        with open(out / "student.gguf", "wb") as handle:
            handle.write(b"GGUF retrained weights")
        return out / "student.gguf"

    monkeypatch.setattr(distill.export, "export", in_place_export)
    argv = ["distill", "export", str(run / "final"), "--base", str(tmp_path / "base")]
    assert run_distill_command(parse([*argv, "--out", str(run / "export")]), settings) == 0
    assert (run / "export" / "student.gguf").read_bytes() == b"GGUF retrained weights"
    assert verified_student(settings.data_dir, "run-7").read_bytes() == PAYLOAD


def test_a_gguf_given_apart_from_the_run_is_not_described_by_the_runs_export(tmp_path):
    """``register RUN --gguf FILE``: the manifest names FILE, and does not claim the adapter
    and dtype the run recorded for its own export (another file)."""
    run = fake_run(tmp_path)
    other = tmp_path / "elsewhere.gguf"
    other.write_bytes(b"GGUF another export")
    manifest = register(run, tmp_path / "data", name="s2", gguf=other).manifest
    assert manifest["export"] == {"gguf": str(other.resolve())}
    assert manifest["sha256"] == hashlib.sha256(b"GGUF another export").hexdigest()
    own = register(run, tmp_path / "data", name="s3").manifest["export"]
    assert own["dtype"] == "f16" and own["gguf"] == str(run / "export" / "student.gguf")


def test_an_unknown_student_is_named_even_beside_a_broken_manifest(tmp_path):
    data = tmp_path / "data"
    broken = register(fake_run(tmp_path), data, name="s1")
    (broken.folder / "manifest.json").write_text("{not json")
    with pytest.raises(StudentError, match=r"no student 'nope' is registered.*\['s1'\]"):
        get_student(data, "nope")
    with pytest.raises(StudentError, match="not readable JSON"):
        get_student(data, "s1")  # its own broken manifest is reported as such
