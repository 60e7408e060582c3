"""Loader for the text2sql-data layout (Finegan-Dollak et al., 2018), e.g. GeoQuery.

A file such as ``geography.json`` holds entries with ``sql`` (gold variants), ``variables``
(``name``, ``example``, ``type``, ``location``), ``query-split`` and ``sentences``; each sentence
has ``text``, ``variables`` (name -> value) and ``question-split``. Every sentence becomes one
`Example`. Variable names appear literally in the text (``what is the capital of state_name0``)
and quoted in the SQL (``STATE_NAME = "state_name0"``); both are substituted, the SQL getting a
proper single-quoted literal (``STATE_NAME = 'texas'``).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any, Literal

from bench.datasets.dataset import Dataset, sqlite_url
from bench.datasets.example import Example, make_tag
from bench.datasets.layout import SQLITE_SUFFIXES, read_json_list, require_keys
from bench.datasets.validate import gold_errors

logger = logging.getLogger(__name__)

_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")


def load_text2sql(
    path: Path | str,
    *,
    database: Path | str | None = None,
    split_by: Literal["question", "query"] = "question",
    name: str | None = None,
    dedupe: bool = True,
    drop_failing_gold: bool = False,
) -> Dataset:
    """Loads a text2sql-data file.

    Args:
        path: The JSON file, or a folder holding exactly one JSON file.
        database: The SQLite file; defaults to the only SQLite file next to the JSON file.
        split_by: Which split labels the examples: ``question`` (the sentence's
            ``question-split``) or ``query`` (the entry's ``query-split``). Both are kept in
            ``metadata``.
        name: Dataset name, also the ``[DATASET:...]`` tag; defaults to the JSON file's stem.
        dedupe: Drop sentences whose substituted question and gold SQL repeat an earlier one.
        drop_failing_gold: Execute every gold query once (`bench.datasets.validate`) and drop the
            examples whose gold SQL fails.

    Returns:
        The dataset, on one database named after the JSON file's stem. Example ids are
        ``<name>-<entry position>-<sentence position>``.

    Raises:
        DatasetFormatError: If the file is malformed.
        FileNotFoundError: If the JSON or SQLite file cannot be found unambiguously.
    """
    json_path = _only_file(Path(path), (".json",)) if Path(path).is_dir() else Path(path)
    db_file = Path(database) if database else _only_file(json_path.parent, SQLITE_SUFFIXES)
    db_id = json_path.stem
    name = name or db_id
    url = sqlite_url(db_file)
    entries = read_json_list(json_path)
    require_keys(json_path, entries, ("sql", "sentences"))

    examples: list[Example] = []
    seen: set[tuple[str, tuple[str, ...]]] = set()
    duplicates = 0
    for i, entry in enumerate(entries):
        defaults = {v["name"]: v.get("example", "") for v in entry.get("variables", [])}
        for j, sentence in enumerate(entry["sentences"]):
            values = {**defaults, **sentence.get("variables", {})}
            question = substitute_question(sentence["text"], values)
            gold = [substitute_sql(sql, values) for sql in entry["sql"]]
            if dedupe and (question, tuple(gold)) in seen:
                duplicates += 1
                continue
            seen.add((question, tuple(gold)))
            _warn_leftovers(f"{name}-{i:03d}-{j:02d}", question, gold, values)
            splits = {"question": sentence.get("question-split"), "query": entry.get("query-split")}
            examples.append(
                Example(
                    id=f"{name}-{i:03d}-{j:02d}",
                    question=question,
                    database=db_id,
                    database_url=url,
                    gold_sql=gold,
                    tags=[make_tag("DATASET", name)],
                    split=splits[split_by],
                    metadata={
                        "question_split": splits["question"],
                        "query_split": splits["query"],
                        "variables": dict(sentence.get("variables", {})),
                    },
                )
            )
    if duplicates:
        logger.info("%s: dropped %d duplicate sentences", name, duplicates)
    dataset = Dataset(name=name, examples=examples, databases={db_id: url})
    if drop_failing_gold:
        dataset = _drop_failing(dataset)
    logger.info("%s: loaded %d examples", name, len(dataset))
    return dataset


def substitute_question(text: str, values: dict[str, str]) -> str:
    """Replaces variable names (whole words) in a question by their values.

    Args:
        text: Question text with placeholders such as ``state_name0``.
        values: Variable name -> value.

    Returns:
        The question with every placeholder replaced.
    """
    if not values:
        return text
    pattern = re.compile(rf"\b({_alternation(values)})\b")
    return pattern.sub(lambda m: values[m.group(1)], text)


def substitute_sql(sql: str, values: dict[str, str]) -> str:
    """Replaces variable names in SQL by literals.

    A quoted placeholder (``"state_name0"`` or ``'state_name0'``) becomes a single-quoted SQL
    string literal; a bare one becomes the value itself when it is a number, else a literal.

    Args:
        sql: SQL with placeholders.
        values: Variable name -> value.

    Returns:
        The SQL with every placeholder replaced.
    """
    if not values:
        return sql
    names = _alternation(values)
    pattern = re.compile(rf"(?P<q>[\"'])(?P<quoted>{names})(?P=q)|\b(?P<bare>{names})\b")

    def literal(match: re.Match[str]) -> str:
        value = str(values[match.group("quoted") or match.group("bare")])
        if match.group("bare") and _NUMBER.match(value):
            return value
        return "'" + value.replace("'", "''") + "'"

    return pattern.sub(literal, sql)


def _alternation(values: dict[str, Any]) -> str:
    return "|".join(re.escape(n) for n in sorted(values, key=len, reverse=True))


def _warn_leftovers(
    example_id: str, question: str, gold: list[str], values: dict[str, str]
) -> None:
    for var in values:
        if any(re.search(rf"\b{re.escape(var)}\b", text) for text in [question, *gold]):
            logger.warning("%s: placeholder %r left after substitution", example_id, var)


def _only_file(folder: Path, suffixes: tuple[str, ...]) -> Path:
    found = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in suffixes)
    if len(found) != 1:
        names = ", ".join(p.name for p in found) or "none"
        raise FileNotFoundError(f"expected one {'/'.join(suffixes)} file in {folder}, got {names}")
    return found[0]


def _drop_failing(dataset: Dataset) -> Dataset:
    errors = gold_errors(dataset)
    for example_id, error in errors.items():
        logger.warning("%s: dropping example, gold SQL fails: %s", example_id, error)
    return dataset.filter(exclude_ids=errors)
