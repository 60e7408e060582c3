"""The docs check: README.md and docs/*.md say what is true.

- Every code block marked runnable (```` ```bash runnable ````) runs; the blocks of one file
  run in order in one shell, in a temporary folder with a temporary ``ALMANAC_DATA_DIR``.
  Blocks marked ``server`` run against a real ``almanac demo`` server this module starts
  (with the tests' model), given ``$ALMANAC``, ``$KEY``, ``$OPS_KEY`` and ``$ADMIN_KEY``;
  blocks marked ``in-repo`` run in the repository's root.
- Every other block is output (``text``), a configuration example (``toml``, ``json``: both
  are parsed by the settings model here), or says on the line before why it is not run.
- docs/configuration.md lists every setting of ``server.settings`` with its default.
- Every relative link points to a file that exists and, with ``#anchor``, to one of its
  headings; no page points outside the repository.

The convention is described in docs/development.md ("The docs check").
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import BaseModel, TypeAdapter
from pydantic_core import PydanticUndefined

from agents.llm.models import MODELS, TEST_MODEL, default_data_dir, is_cached, model_path
from server.settings import JobSettings, LimitSettings, LLMTierSettings, Settings
from server.settings_confidence import ConfidenceSettings
from server.settings_retrieval import RetrievalSettings
from tests.support.markdown import (
    Block,
    anchors_of,
    blocks_of,
    links_of,
    prose_lines,
    table_rows,
)
from tests.support.postgres import free_port
from tests.support.prebuilt import copy_demo

ROOT = Path(__file__).resolve().parents[1]
DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
CONFIGURATION = ROOT / "docs" / "configuration.md"
VENV_BIN = Path(sys.executable).parent
OUTPUT_LANGUAGES = frozenset({"text"})
CONFIG_LANGUAGES = frozenset({"toml", "json"})
SHELL_LANGUAGES = frozenset({"bash", "sh"})
ATTRIBUTES = frozenset({"runnable", "server", "in-repo"})
OUTSIDE_SETTINGS = frozenset({"ALMANAC_CONFIG", "ALMANAC_BENCH_DATA", "ALMANAC_TEST_PG_URL"})
NESTED = {
    "limits": LimitSettings,
    "jobs": JobSettings,
    "confidence": ConfidenceSettings,
    "retrieval": RetrievalSettings,
}
# the docs check's server: the tests' model, with waits long enough for a busy machine
DEMO_TIER = {
    "name": "default",
    "model": TEST_MODEL,
    "n_threads": 2,
    "timeout_s": 600,
    "max_wait_s": 600,
}
READY_STATES = frozenset({"ok", "ready"})
SERVER_START_S = 900  # the models load and the indices build: minutes on a busy machine
FILE_TIMEOUT_S = 600
MARKER = "@@docs-block"


def all_blocks() -> list[Block]:
    return [block for path in DOCS for block in blocks_of(path)]


def runnable_files() -> list[Path]:
    return [path for path in DOCS if any(block.runnable for block in blocks_of(path))]


# --------------------------------------------------------------------- what blocks are
def test_every_block_runs_or_says_why_not() -> None:
    unexplained = []
    for block in all_blocks():
        where = block.where(ROOT)
        assert block.attributes <= ATTRIBUTES, f"{where}: unknown attributes {block.attributes}"
        if block.runnable:
            assert block.language in SHELL_LANGUAGES, f"{where}: runnable blocks are bash"
            assert block.not_run_reason is None, f"{where}: runnable and 'not run'?"
        elif (
            block.language not in OUTPUT_LANGUAGES | CONFIG_LANGUAGES
            and block.not_run_reason is None
        ):
            unexplained.append(where)
    assert not unexplained, (
        "blocks neither runnable, output nor configuration, without a "
        f"'<!-- not run: why -->' line before them: {unexplained}"
    )


def test_the_check_runs_blocks_of_every_kind() -> None:
    """A docs check that runs nothing cannot fail."""
    runnable = [block for block in all_blocks() if block.runnable]
    assert len(runnable) >= 20
    assert any(block.needs_server for block in runnable)
    assert any(not block.needs_server and not block.in_repo for block in runnable)
    assert any(block.in_repo for block in runnable)
    readme = [block for block in blocks_of(ROOT / "README.md") if block.runnable]
    assert len(readme) >= 5, "the README's tour is run"


# ------------------------------------------------------------------------------- links
def test_relative_links_point_to_files_and_headings() -> None:
    broken = []
    for path in DOCS:
        for line, target in links_of(path):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            file_part, _, anchor = target.partition("#")
            linked = (path.parent / file_part).resolve() if file_part else path
            where = f"{path.relative_to(ROOT)}:{line}: {target}"
            if not linked.exists():
                broken.append(f"{where} (no such file)")
            elif not linked.is_relative_to(ROOT):
                broken.append(f"{where} (outside the repository)")
            elif anchor and linked.suffix == ".md" and anchor not in anchors_of(linked):
                broken.append(f"{where} (no such heading)")
    assert not broken, "\n".join(broken)


def test_no_page_points_outside_the_repository() -> None:
    for path in DOCS:
        for line, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            assert "../shared" not in text, f"{path.relative_to(ROOT)}:{line}: {text}"
            assert "DESIGN.md" not in text, f"{path.relative_to(ROOT)}:{line}: {text}"


def test_the_readme_starts_with_make_demo_and_make_test() -> None:
    first = blocks_of(ROOT / "README.md")[0]
    commands = [line.split("#")[0].strip() for line in first.code.splitlines()]
    assert commands == ["make demo", "make test"]
    title = prose_lines(ROOT / "README.md")[0]
    assert title == (1, "# Almanac"), title


# ----------------------------------------------------------------------- configuration
def _rendered(default: Any) -> str | None:
    """A default as the reference writes it, None when it is described in words."""
    if default is None or default is PydanticUndefined:
        return None
    if isinstance(default, bool):
        return "true" if default else "false"
    if isinstance(default, float) and default.is_integer():
        return str(int(default))
    return str(default)


def _expected(model: type[BaseModel], prefix: str) -> dict[str, str | None]:
    expected: dict[str, str | None] = {}
    for name, field in model.model_fields.items():
        if name in NESTED and model is Settings:
            expected.update(_expected(NESTED[name], f"ALMANAC_{name.upper()}__"))
            continue
        default = "[]" if field.default_factory is list else _rendered(field.default)
        expected[f"{prefix}{name.upper()}" if prefix else name] = default
    return expected


def _documented(sections: tuple[str, ...]) -> dict[str, str]:
    rows = [row for section in sections for row in table_rows(CONFIGURATION, section)]
    return {row[0].strip("`"): row[1] for row in rows}


def test_the_configuration_reference_lists_every_setting_with_its_default() -> None:
    expected = _expected(Settings, "ALMANAC_")
    sections = ("Server", "Limits", "Jobs", "Confidence", "Retrieval", "Outside the server")
    documented = _documented(sections)
    assert set(documented) - OUTSIDE_SETTINGS == set(expected)
    tiers = _expected(LLMTierSettings, "")
    documented_tiers = _documented(("LLM tiers",))
    assert set(documented_tiers) == set(tiers)
    for name, default in [*expected.items(), *tiers.items()]:
        cell = documented.get(name) or documented_tiers[name]
        if default is not None:
            assert f"`{default}`" in cell, f"{name}: default {default!r}, documented {cell!r}"


def test_configuration_examples_load(tmp_path, monkeypatch) -> None:
    examples = [b for b in all_blocks() if b.language in CONFIG_LANGUAGES and not b.runnable]
    assert any(b.language == "toml" for b in examples)
    for name in [name for name in os.environ if name.startswith("ALMANAC_")]:
        monkeypatch.delenv(name)
    for block in examples:
        where = block.where(ROOT)
        if block.language == "toml":
            (tmp_path / "almanac.toml").write_text(block.code)
            monkeypatch.setenv("ALMANAC_CONFIG", str(tmp_path / "almanac.toml"))
            assert Settings().llm_tiers, where
        else:
            data = json.loads(block.code)
            if isinstance(data, list):
                assert TypeAdapter(list[LLMTierSettings]).validate_python(data), where


# --------------------------------------------------------------------- running blocks
@pytest.fixture(scope="module")
def sandbox(tmp_path_factory) -> dict[str, str]:
    """The environment of the runnable blocks: a temporary data folder (with the packaged
    models linked in when the default data folder holds them), the venv first on PATH."""
    root = tmp_path_factory.mktemp("docs")
    data, work = root / "data", root / "work"
    (data / "models").mkdir(parents=True)
    work.mkdir()
    for model in MODELS.values():  # assembling a model copies up to a gigabyte: reuse it
        cached = model_path(model, default_data_dir())
        if is_cached(model, default_data_dir()):
            for path in (cached, cached.with_suffix(cached.suffix + ".sha256")):
                (data / "models" / path.name).symlink_to(path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ALMANAC_")}
    env.update(
        PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        ALMANAC_DATA_DIR=str(data),
        ALMANAC_CONFIG=str(root / "absent.toml"),
        ALMANAC_EMBEDDER="none",
        DOCS_WORK=str(work),
        REPO=str(ROOT),
    )
    return env


@pytest.fixture(scope="module")
def demo_server(sandbox, request) -> Iterator[dict[str, str]]:
    """``almanac demo`` on a free port with the tests' model; the variables of server blocks.
    A data folder that no block wrote into yet starts as the session's ``almanac demo
    --no-serve`` build left it (built once, tests/conftest.py): the demo reuses its AutoFin
    database and knowledge base as a second ``make demo`` does."""
    data = Path(sandbox["ALMANAC_DATA_DIR"])
    if [path.name for path in data.iterdir()] == ["models"]:
        copy_demo(request.getfixturevalue("demo_build"), data)
    port = free_port()
    env = {
        **sandbox,
        "ALMANAC_PORT": str(port),
        "ALMANAC_LLM_TIERS": json.dumps([DEMO_TIER]),
        "ALMANAC_LIMITS__LLM_QUEUE_WAIT_S": "600",
        # no runnable block asks the model (that takes minutes on a busy machine; the blocks
        # that do name the tests that cover them): the server need not warm it
        "ALMANAC_WARM_ON_START": "false",
        "ALMANAC_JOBS__POLL_S": "0.2",
    }
    log_path = Path(sandbox["DOCS_WORK"]).parent / "demo.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [str(VENV_BIN / "almanac"), "demo"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(process, base, log_path)
        keys = {
            variable: _create_key(env, role)
            for variable, role in (("KEY", "analyst"), ("OPS_KEY", "ops"), ("ADMIN_KEY", "admin"))
        }
        yield {"ALMANAC": base, **keys}
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


def _wait_ready(process: subprocess.Popen, base: str, log_path: Path) -> None:
    deadline = time.monotonic() + SERVER_START_S
    status = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"almanac demo exited {process.returncode}:\n{_tail(log_path)}")
        try:
            status = httpx.get(f"{base}/v1/health", timeout=5).json().get("status")
        except (httpx.TransportError, ValueError):
            status = None
        if status in READY_STATES:
            return
        if status in ("degraded", "unavailable"):
            raise AssertionError(f"the demo server is {status}:\n{_tail(log_path)}")
        time.sleep(1)
    raise AssertionError(f"the demo server was not ready ({status}):\n{_tail(log_path)}")


def _create_key(env: dict[str, str], role: str) -> str:
    done = subprocess.run(
        [str(VENV_BIN / "almanac"), "keys", "create", "--role", role, "--user", f"docs-{role}"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1]


def _tail(path: Path, chars: int = 4000) -> str:
    return path.read_text(errors="replace")[-chars:]


def _script(blocks: list[Block]) -> str:
    """One bash script: each block after a marker line naming it, in its folder."""
    parts = ["set -euo pipefail"]
    for index, block in enumerate(blocks):
        folder = '"$REPO"' if block.in_repo else '"$DOCS_WORK"'
        parts += [f"cd {folder}", f"printf '\\n{MARKER} {index}\\n'", block.code]
    return "\n".join(parts) + "\n"


def _failure(blocks: list[Block], output: str, why: str) -> str:
    """The failing block (the last one whose marker was printed) with its output."""
    started = re.findall(rf"^{MARKER} (\d+)$", output, flags=re.MULTILINE)
    index = int(started[-1]) if started else 0
    block = blocks[index]
    own_output = output.rsplit(f"{MARKER} {index}\n", 1)[-1]
    return (
        f"{block.where(ROOT)}: the block {why}\n--- block ---\n{block.code}\n"
        f"--- its output ---\n{own_output[-6000:]}"
    )


@pytest.mark.slow
@pytest.mark.timeout(SERVER_START_S + FILE_TIMEOUT_S + 120)  # the server starts in the setup
@pytest.mark.parametrize("path", runnable_files(), ids=lambda path: path.name)
def test_runnable_blocks_run(path: Path, sandbox, request) -> None:
    blocks = [block for block in blocks_of(path) if block.runnable]
    env = dict(sandbox)
    if any(block.needs_server for block in blocks):
        env.update(request.getfixturevalue("demo_server"))
    log_path = Path(env["DOCS_WORK"]).parent / f"{path.name}.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            ["bash", "-c", _script(blocks)],
            cwd=env["DOCS_WORK"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        process.wait(timeout=FILE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        pytest.fail(_failure(blocks, _tail(log_path, 10**6), f"ran past {FILE_TIMEOUT_S} s"))
    output = _tail(log_path, 10**6)
    if process.returncode != 0:
        pytest.fail(_failure(blocks, output, f"exited {process.returncode}"))
    assert len(re.findall(rf"^{MARKER} \d+$", output, flags=re.MULTILINE)) == len(blocks)
