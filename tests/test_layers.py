"""Imports only point downwards across the layers of docs/architecture.md (Layers).

Every ``import`` and ``from ... import`` in the packages is read from the source (also those
inside functions and under ``TYPE_CHECKING``: a lazy import is still a dependency), and each
one that points upward fails the test with the file, the line and the import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# each package may import itself and the packages listed after it
ALLOWED = {
    "ukf": set(),
    "kb": {"ukf"},
    "indices": {"kb", "ukf"},
    "agents": {"indices", "kb", "ukf"},
    "distill": {"agents", "indices", "kb", "ukf"},
    "bench": {"distill", "agents", "indices", "kb", "ukf"},
    "server": {"bench", "distill", "agents", "indices", "kb", "ukf"},
    # load benchmarks of a running server: above everything, imported by nothing
    "perf": {"server", "bench", "distill", "agents", "indices", "kb", "ukf"},
}
# inside agents: the LLM backends stand alone, and only the top may import the pipeline
AGENTS_INNER = {
    "agents.llm": {"agents.llm"},
}
# (their options are a plain data module, agents.pipeline_options, which the SQL tiers read)
PIPELINE = "agents.pipeline"
OURS = set(ALLOWED) | {"tests"}


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every absolute import of our packages in ``path``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found += [(node.lineno, name) for name in names if name.split(".")[0] in OURS]
    return found


def modules() -> list[tuple[str, Path]]:
    return [
        (".".join(path.relative_to(ROOT).with_suffix("").parts), path)
        for package in ALLOWED
        for path in sorted((ROOT / package).rglob("*.py"))
    ]


def violations(module: str, found: list[tuple[int, str]], shown: str) -> list[str]:
    """What is wrong with ``module`` importing ``found`` ((line, module) pairs); ``shown``
    names the file in the messages."""
    package = module.split(".")[0]
    wrong = []
    for line, imported in found:
        target = imported.split(".")[0]
        where = f"{shown}:{line} imports {imported}"
        if target != package and target not in ALLOWED[package]:
            wrong.append(f"{where} ({package} may import only {sorted(ALLOWED[package])})")
        for inner, allowed in AGENTS_INNER.items():
            inside = module.startswith(inner + ".") and imported.startswith("agents.")
            if inside and not any(imported == a or imported.startswith(a + ".") for a in allowed):
                wrong.append(f"{where} ({inner} may import only {sorted(allowed)})")
        if imported == PIPELINE and module.startswith("agents.") and module.count(".") > 1:
            wrong.append(f"{where} (the pipeline is the top of agents: subpackages never use it)")
    return wrong


def test_the_packages_are_all_found() -> None:
    found = {module.split(".")[0] for module, _ in modules()}
    assert found == set(ALLOWED)
    assert len(modules()) > 150


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_no_import_points_upward(package: str) -> None:
    bad = [
        problem
        for module, path in modules()
        if module.split(".")[0] == package
        for problem in violations(module, imports_of(path), str(path.relative_to(ROOT)))
    ]
    assert not bad, "imports against the layers:\n" + "\n".join(bad)


def test_upward_imports_are_caught_even_inside_functions(tmp_path: Path) -> None:
    sneaky = tmp_path / "sneaky.py"
    sneaky.write_text("def f():\n    from agents.pipeline import Pipeline\n    return Pipeline\n")
    assert imports_of(sneaky) == [(2, "agents.pipeline")]
    assert violations("kb.sneaky", imports_of(sneaky), "kb/sneaky.py")
    assert violations("bench.perf.x", [(1, "server.state")], "bench/perf/x.py")
    assert violations("agents.llm.x", [(3, "agents.rag.agent")], "agents/llm/x.py")
    assert violations("agents.sql.x", [(1, "agents.pipeline")], "agents/sql/x.py")
    assert not violations("agents.sql.x", [(1, "agents.rag.agent"), (2, "kb.store")], "x")
    assert not violations("server.x", [(1, "bench.autofin")], "server/x.py")
