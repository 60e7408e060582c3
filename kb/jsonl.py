"""JSON Lines reading and writing of UKF entries.

Each line is one entry's canonical JSON (:meth:`ukf.BaseUKF.to_json`), so exporting, importing
and exporting again yields the same bytes. Reading validates every line before returning; an
error names the source, the 1-based line number and the offending field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from pydantic import ValidationError

from kb.errors import JSONLImportError
from kb.strict_json import StrictJSONError, loads_strict
from ukf import BaseUKF, UKFError

JSONLSource = str | Path | IO[str]
JSONLTarget = str | Path | IO[str]


def _describe(error: ValidationError) -> str:
    first = error.errors()[0]
    location = ".".join(str(part) for part in first["loc"]) or "(entry)"
    extra = f" (+{error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f"field {location!r}: {first['msg']}{extra}"


def parse_line(line: str, source: str, number: int) -> BaseUKF:
    try:
        payload = loads_strict(line)
    except json.JSONDecodeError as exc:
        raise JSONLImportError(source, number, f"invalid JSON: {exc.msg}") from None
    except StrictJSONError as exc:  # NaN, a lone surrogate, a huge integer, deep nesting
        raise JSONLImportError(source, number, str(exc)) from None
    try:
        return BaseUKF.from_dict(payload)
    except ValidationError as exc:
        raise JSONLImportError(source, number, _describe(exc)) from None
    except UKFError as exc:
        raise JSONLImportError(source, number, str(exc)) from None


def read_jsonl(source: JSONLSource) -> list[BaseUKF]:
    """Parse and validate every non-blank line of ``source``."""
    return [entry for _number, entry in read_numbered_jsonl(source)]


def read_numbered_jsonl(source: JSONLSource) -> list[tuple[int, BaseUKF]]:
    """Like :func:`read_jsonl`, each entry with its 1-based line number, so that checks made
    after parsing (such as the server's write permissions) can name the offending line."""
    if isinstance(source, str | Path):
        with open(source, encoding="utf-8") as handle:
            return _read(handle, Path(source).name)  # not the folder: messages reach clients
    return _read(source, getattr(source, "name", "<stream>"))


def _read(handle: IO[str], name: str) -> list[tuple[int, BaseUKF]]:
    return [
        (number, parse_line(line, name, number))
        for number, line in enumerate(handle, start=1)
        if line.strip()
    ]


def write_jsonl(entries: Iterable[BaseUKF], target: JSONLTarget) -> int:
    """Write one canonical JSON line per entry; return how many."""
    return write_jsonl_lines((entry.to_json() for entry in entries), target)


def write_jsonl_lines(lines: Iterable[str], target: JSONLTarget) -> int:
    """Write canonical JSON documents, one per line; return how many."""
    if isinstance(target, str | Path):
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        with open(target, "w", encoding="utf-8", newline="\n") as handle:
            return write_jsonl_lines(lines, handle)
    count = 0
    for line in lines:
        target.write(line + "\n")
        count += 1
    return count
