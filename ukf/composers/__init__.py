"""Composers: named functions that render a UKF entry as text, mostly from Jinja templates.

Every template type has a composer of the same name backed by ``<type>.j2`` in this folder.
Templates receive the entry as ``ukf`` plus whatever context the caller passes to
``ukf.text(...)``. The environment is sandboxed and strict: a template that reads a missing
variable fails loudly instead of printing nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import FileSystemLoader, StrictUndefined
from jinja2.sandbox import SandboxedEnvironment

from ukf.registry import composer

TEMPLATE_DIR = Path(__file__).parent
TEMPLATE_COMPOSERS: tuple[str, ...] = (
    "knowledge",
    "document",
    "experience",
    "table",
    "column",
    "enum",
    "taxonomy",
    "predicate",
    "synonym",
    "metric",
    "rule",
)


@lru_cache(maxsize=1)
def environment() -> SandboxedEnvironment:
    env = SandboxedEnvironment(
        loader=FileSystemLoader(str(TEMPLATE_DIR)),
        undefined=StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )
    return env


def render_template(template: str, **variables: Any) -> str:
    """Render ``template`` (a file name in this folder) and strip surrounding blank lines."""
    return environment().get_template(template).render(**variables).strip()


def _template_composer(template: str) -> Callable[..., str]:
    def compose(ukf: Any, **context: Any) -> str:
        return render_template(template, ukf=ukf, context=context)

    compose.__name__ = f"compose_{template.removesuffix('.j2')}"
    return compose


def register_template_composer(name: str, template: str) -> None:
    """Register ``name`` as a composer that renders ``template`` (a ``.j2`` file here)."""
    composer(name)(_template_composer(template))


for _name in TEMPLATE_COMPOSERS:
    register_template_composer(_name, f"{_name}.j2")


@composer("brief")
def compose_brief(ukf: Any, **_context: Any) -> str:
    """One line: ``type name: short description`` (used when the token budget is tight)."""
    summary = ukf.short_description or ukf.description.split("\n", 1)[0]
    return f"{ukf.type} {ukf.name}" + (f": {summary}" if summary else "")
