"""The CoT consistency checker: does an explanation agree with its SQL's AST?

An explanation (short numbered steps) is accepted when

- it is numbered steps at all, and ties the question's phrases to the SQL rather than
  quoting the list of the SQL's parts the writer's prompt gives (``"filter x = 1"``);
- every name it gives is in the SQL: backticked text is read with sqlglot's tokenizer (each
  identifier must be a table, column, alias or function of the SQL, each string or number a
  literal of it), quoted text must be a literal or a name of the SQL or a phrase of the
  question (or a name of the knowledge the writer was shown), bare identifier-like words
  (``Song_release_year``, ``t.c``) that are table or column names of the profiled schema
  must be in the SQL, and bare numbers must be literals of the SQL (``LIMIT`` included) or
  numbers of the question;
- every part of the SQL is explained: each filter (an atomic ``WHERE``/``HAVING`` condition
  that is not a join: one of its columns named and each of its literals given), each join
  (both tables named, and the join column or a joining word), each grouping and ordering
  column (named, with a grouping or ordering word), and each aggregate (its word, such as
  "count" or "average", and its column).

The SQL's parts come from :func:`agents.learn.cot.sql_parts.read_sql` (the facts of
:func:`agents.learn.mine.sql_facts.sql_facts` and what they do not keep). A column or table
counts as named by its name, by its words (``song release year``) or by two or more
consecutive of them, plural ``s``/``es`` allowed.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from sqlglot.errors import SqlglotError
from sqlglot.tokens import Tokenizer, TokenType

from agents.learn.cot.sql_parts import (
    SqlParts,
    is_number,
    number_text,
    read_sql,
)
from kb.target.sql_guard import sqlglot_dialect

STEP = re.compile(r"^\s*(?:step\s*)?(\d+)\s*[.):]\s*(.+)$", re.IGNORECASE)
_BACKTICKED = re.compile(r"`([^`\n]+)`")
_QUOTED = re.compile(r"(?<![A-Za-z0-9])'([^'\n]+?)'(?![A-Za-z0-9])|\"([^\"\n]+?)\"")
_WORD = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))?\b")
_PARTS_LINE = re.compile(
    r"(?:table|join|filter|grouping by|ordering by|computed)\s+\S", re.IGNORECASE
)
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w]|\.\d)")
_AGGREGATE_WORDS = {
    "count": r"count|number|how many|many|total",
    "sum": r"sum|total|add",
    "avg": r"average|avg|mean",
    "min": r"min|minimum|lowest|smallest|least|fewest|youngest|earliest|shortest|cheapest",
    "max": r"max|maximum|highest|largest|most|greatest|oldest|latest|longest|biggest",
}
_GROUPING = r"group|each|per|every|by"
_ORDERING = (
    r"order|sort|rank|highest|lowest|most|least|top|largest|smallest|greatest|fewest|"
    r"ascending|descending|first|last|biggest|oldest|youngest|max|min|best|worst|longest|"
    r"shortest|ascend|descend|increasing|decreasing|maximum|minimum"
)
PART_WORDS = frozenset(
    {"table", "join", "filter", "grouping", "ordering", "computed", "aggregate", "limit"}
)
"""Words naming kinds of SQL parts (the writer's prompt lists the parts with them)."""
_JOINING = r"join|link|connect|match|combine|relate|relation|through|via|pair"


@dataclass
class CotVerdict:
    """The checker's answer: ``unexplained`` parts of the SQL, names ``absent`` from it, and
    ``problems`` of form (no numbered steps)."""

    unexplained: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not (self.unexplained or self.absent or self.problems)

    @property
    def reasons(self) -> list[str]:
        """Every reason it failed, one line each (empty when it passed)."""
        return [
            *self.problems,
            *(f"unexplained {part}" for part in self.unexplained),
            *(f"named but not in the SQL: {name}" for name in self.absent),
        ]

    @property
    def kinds(self) -> list[str]:
        """The kinds of failure (``unexplained filter``, ``absent column``, ...), for counts."""
        kinds = [p.split(":")[0] for p in self.problems]
        kinds += ["unexplained " + part.split(" ", 1)[0] for part in self.unexplained]
        kinds += ["absent " + name.split(" ", 1)[0] for name in self.absent]
        return list(dict.fromkeys(kinds))

    def to_dict(self) -> dict[str, object]:
        return {
            "passed": self.passed,
            "unexplained": list(self.unexplained),
            "absent": list(self.absent),
            "problems": list(self.problems),
        }


def steps_of(explanation: str) -> list[str]:
    """The numbered steps of ``explanation`` (a step's continuation lines joined to it)."""
    steps: list[str] = []
    for line in explanation.splitlines():
        matched = STEP.match(line)
        if matched:
            steps.append(matched.group(2).strip())
        elif steps and line.strip():
            steps[-1] += " " + line.strip()
    return steps


def check_cot(
    question: str,
    sql: str,
    explanation: str,
    *,
    dialect: str = "sqlite",
    schema_names: Iterable[str] = (),
    phrases: Iterable[str] = (),
) -> CotVerdict:
    """Check ``explanation`` of ``sql`` (answering ``question``) as the module docstring
    says; ``schema_names``: the profiled tables and columns of the database (bare words
    that name one of them must be in the SQL); ``phrases``: further phrases a quoted or
    backticked mention may be, as the question's own (the names of the knowledge the writer
    was shown)."""
    dialect = sqlglot_dialect(dialect)  # an experience records SQLAlchemy's "postgresql"
    parsed = read_sql(sql, dialect)
    verdict = CotVerdict()
    steps = steps_of(explanation)
    if not steps:
        verdict.problems.append("not numbered steps: no line starts with '1.'")
        return verdict
    text = "\n".join(steps)
    lower = text.lower()
    schema = {name.lower() for name in schema_names}
    copied = [
        q for q in _quoted_texts(text) if _PARTS_LINE.match(q) and q.lower() not in question.lower()
    ]
    if copied:
        verdict.problems.append(
            f"copied the SQL's parts list, not the question's phrases: {copied[0]!r}"
        )
    allowed = "\n".join([question, *phrases])
    verdict.absent = _absent_names(text, allowed, parsed, schema, dialect)
    verdict.unexplained = _unexplained(lower, parsed)
    return verdict


def _quoted_texts(text: str) -> list[str]:
    return [(m.group(1) or m.group(2) or "").strip() for m in _QUOTED.finditer(text)]


# ------------------------------------------------------------------- names and literals
def _absent_names(
    text: str, question: str, sql: SqlParts, schema: set[str], dialect: str
) -> list[str]:
    absent: dict[str, None] = {}
    asked = question.lower()
    rest = text
    for matched in _BACKTICKED.finditer(text):
        for problem in _backticked(matched.group(1), asked, sql, schema, dialect):
            absent[problem] = None
        rest = rest.replace(matched.group(0), " ")
    for matched in _QUOTED.finditer(rest):
        quoted = (matched.group(1) or matched.group(2) or "").strip()
        for problem in _quoted(quoted, asked, sql, schema, dialect):
            absent[problem] = None
        rest = rest.replace(matched.group(0), " ")
    for matched in _WORD.finditer(rest):
        first, second = matched.group(1), matched.group(2)
        for word in (first, second) if second else (first,):
            key = word.lower() if word else ""
            if key and _identifier_like(word) and key in schema and key not in sql.names:
                absent[f"name {word}"] = None
    for matched in _NUMBER.finditer(rest):
        number = number_text(matched.group(1))
        if number not in sql.numbers and not re.search(rf"(?<![\w.]){number}(?![\w])", asked):
            absent[f"number {matched.group(1)}"] = None
    return list(absent)


def _backticked(
    mention: str, asked: str, sql: SqlParts, schema: set[str], dialect: str
) -> list[str]:
    try:
        tokens = Tokenizer(dialect=dialect).tokenize(mention) if dialect else []
    except (SqlglotError, ValueError):
        tokens = []
    if not tokens:
        problem = _name_problem(mention.strip(), asked, sql, schema)
        return [problem] if problem else []
    problems = []
    for index, token in enumerate(tokens):
        following = tokens[index + 1].token_type if index + 1 < len(tokens) else None
        if token.token_type == TokenType.STRING:
            if _string_problem(token.text, sql):
                problems.append(f"literal '{token.text}'")
        elif token.token_type == TokenType.NUMBER:
            if number_text(token.text) not in sql.numbers:
                problems.append(f"number {token.text}")
        elif token.token_type == TokenType.VAR and following == TokenType.L_PAREN:
            if token.text.lower() not in sql.functions:
                problems.append(f"function {token.text.upper()}")
        elif token.token_type in (TokenType.VAR, TokenType.IDENTIFIER):
            problem = _name_problem(token.text, asked, sql, schema)
            if problem:
                problems.append(problem)
    return problems


def _name_problem(name: str, asked: str, sql: SqlParts, schema: set[str]) -> str | None:
    key = name.lower()
    if not key or key in sql.names or key in sql.strings or key in sql.functions:
        return None
    if key in PART_WORDS:
        return None  # the words the prompt lists the SQL's parts with
    if "." in key:
        parts = [p for p in key.split(".") if p]
        missing = [p for p in parts if p not in sql.names]
        return f"name {name}" if missing else None
    if key in schema:
        return f"name {name}"
    if key in asked:
        return None  # a question phrase in backticks
    return f"name {name}"


def _quoted(quoted: str, asked: str, sql: SqlParts, schema: set[str], dialect: str) -> list[str]:
    """Problems of a quoted mention: a literal or name of the SQL, a phrase of the question,
    or a fragment of SQL (read like backticked text) pass."""
    key = quoted.lower().strip("%")
    if not key or key in sql.strings or key in sql.names or key in sql.functions:
        return []
    if key in schema:
        return [f"name {quoted}"]
    if key in asked or (is_number(key) and number_text(key) in sql.numbers):
        return []
    if re.fullmatch(r"[\w\s]+", quoted) and len(quoted.split()) < 2:
        if key in PART_WORDS or _is_keyword(quoted, dialect):
            return []  # 'SELECT', 'filter': a word about SQL, not a value
        return [f"literal '{quoted}'"]
    return _backticked(quoted, asked, sql, schema, dialect)


def _is_keyword(word: str, dialect: str) -> bool:
    """``word`` is one SQL keyword token (``SELECT``, ``FILTER``), not a name or value."""
    try:
        tokens = Tokenizer(dialect=dialect).tokenize(word)
    except (SqlglotError, ValueError):
        return False
    kinds = (TokenType.VAR, TokenType.IDENTIFIER, TokenType.STRING, TokenType.NUMBER)
    return len(tokens) == 1 and tokens[0].token_type not in kinds


def _string_problem(value: str, sql: SqlParts) -> bool:
    key = value.lower().strip("%")
    return bool(key) and key not in sql.strings


def _identifier_like(word: str) -> bool:
    """A word that reads as a name, not as English: an underscore, a digit, or camelCase."""
    return "_" in word.strip("_") or any(c.isdigit() for c in word) or _camel(word)


def _camel(word: str) -> bool:
    return any(a.islower() and b.isupper() for a, b in itertools.pairwise(word))


# ------------------------------------------------------------------ what must be explained
def _unexplained(text: str, sql: SqlParts) -> list[str]:
    missing: dict[str, None] = {}
    for shown, columns, literals in sql.filters:
        named = not columns or any(_mentions(text, c) for c in columns)
        given = all(_literal_given(text, v) for v in literals)
        if not (named and given):
            missing[f"filter {shown}"] = None
    for join in sql.facts.joins:
        tables = all(_mentions(text, t) for t in (join.left, join.right))
        how = _mentions(text, join.left_column) or _mentions(text, join.right_column)
        if not (tables and (how or _said(_JOINING, text))):
            missing[f"join {join.condition}"] = None
    for table, column in dict.fromkeys(sql.facts.group_by):
        if not (_mentions(text, column) and _said(_GROUPING, text)):
            where = f"{table}.{column}" if table else column
            missing[f"grouping by {where}"] = None
    for shown, columns, aggregate in sql.ordering:
        named = any(_mentions(text, c) for c in columns) if columns else True
        if aggregate is not None:
            named = named and _said(_AGGREGATE_WORDS.get(aggregate, aggregate), text)
        if not (named and _said(_ORDERING, text)):
            missing[f"ordering by {shown}"] = None
    for shown, name, columns in sql.aggregates:
        words = _AGGREGATE_WORDS.get(name, re.escape(name))
        named = not columns or any(_mentions(text, c) for c in columns)
        if not (named and _said(words, text)):
            missing[f"aggregate {shown}"] = None
    return list(missing)


def _said(words: str, text: str) -> bool:
    """One of the ``words`` (a regex alternation) is a word of ``text``, inflected or not."""
    return bool(re.search(rf"\b(?:{words})(?:s|es|ed|d|ing|ly)?\b", text))


def _mentions(text: str, name: str) -> bool:
    """``name`` (a table or column) is named in ``text`` (lower-case): see the module
    docstring."""
    words = [w for w in re.split(r"[_\s]+|(?<=[a-z])(?=[A-Z])", name) if w]
    candidates = {name.lower(), " ".join(words).lower()}
    lowered = [w.lower() for w in words]
    for size in range(2, len(lowered)):
        for start in range(len(lowered) - size + 1):
            candidates.add(" ".join(lowered[start : start + size]))
    return any(
        re.search(rf"(?<![a-z0-9]){re.escape(c)}(?:s|es)?(?![a-z0-9])", text) for c in candidates
    )


def _literal_given(text: str, value: str | float | int) -> bool:
    if isinstance(value, str) and not is_number(value):
        key = value.strip("%").lower()
        return not key or key in text
    number = number_text(str(value))
    return bool(re.search(rf"(?<![\w.]){re.escape(number)}(?:\.0+)?(?![\w]|\.\d)", text))
