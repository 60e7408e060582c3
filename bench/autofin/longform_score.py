""" "Planted facts found": whether analysis answers to the long-form AutoFin questions name the
planted pattern, decided by deterministic text matching (no LLM), and the share found per type.

An answer is read as the analysis agent writes it (``agents.analysis.models.AnalysisAnswer``
as JSON, e.g. ``almanac analyze --json``): its ``short_answer`` and its ``findings`` (their
``text`` and ``numbers``); caveats, facts and evidence rows are not what the answer says.
Answers are matched to questions by ``id``, else by the question's text; a question with no
answer is missed (``--answered-only`` leaves it out, for a partial run).

Per expected fact (``expects.kind``, see :mod:`bench.autofin.longform`):

- ``driver``: the first region the text names is the planted region and the first model of the
  brand it names is the planted model (code, name or alias/nickname);
- ``peak_month``: in the first sentence with a peak word ("peak", "highest", ...) that names a
  month, the first month named is the planted one;
- ``trend_up``: the first direction word of the text says up ("grew", "increase", ...);
- ``forecast``: a number in a sentence (or a finding's ``numbers``) with a forecast word lies in
  the planted interval (scale words read: "74.6 million", "$74.6M");
- ``discount_band``: in sentences about discounts or bands, the first percentage or range of
  percentages named lies in the planted band ("15-20%", "above 15%", "17.5%").
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.autofin import calendar as cal
from bench.autofin.catalog import REGIONS, models_of
from bench.autofin.longform import TYPES

NO_ANSWER = "no answer"
SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
PEAK_WORDS = re.compile(r"peak|highest|strongest|busiest|maximum|top month|most\b|spike", re.I)
UP = r"grow|grew|growth|increas|rise|rose|rising|upward|climb|higher"
DOWN = r"declin|decreas|fell|fall|falling|drop|downward|shrink|shrank|lower"
DIRECTION = re.compile(rf"\b(?:(?P<up>{UP})|(?P<down>{DOWN}))", re.I)
FORECAST_WORDS = re.compile(r"forecast|predict|expect|project|estimat|will\b|next\b", re.I)
DISCOUNT_WORDS = re.compile(r"discount|band", re.I)
NUMBER = re.compile(
    r"(?<![\w.])(-?\d[\d,]*(?:\.\d+)?)\s*(billion|bn|million|mn|m|thousand|k)?(?![\w])", re.I
)
SCALE = {"billion": 1e9, "bn": 1e9, "million": 1e6, "mn": 1e6, "m": 1e6, "thousand": 1e3, "k": 1e3}
PERCENTS = re.compile(
    r"(?<![\w.])(\d+(?:\.\d+)?)\s*%?\s*(?:-|–|to)\s*(\d+(?:\.\d+)?)\s*(?:%|percent)"
    r"|(?<![\w.\-–])(\d+(?:\.\d+)?)\s*(?:%|percent)",
    re.I,
)


@dataclass(frozen=True)
class Verdict:
    """Whether one question's answer names its planted fact, and why (what was read)."""

    id: str
    type: str
    kind: str
    found: bool
    why: str


def answer_text(answer: dict[str, Any]) -> str:
    """The short answer and every finding's text, one per line."""
    parts = [str(answer.get("short_answer") or "")]
    for finding in answer.get("findings") or []:
        parts.append(str(finding.get("text", "")) if isinstance(finding, dict) else str(finding))
    return "\n".join(p for p in parts if p.strip())


def sentences(text: str) -> list[str]:
    return [s for s in SENTENCE.split(text) if s.strip()]


def _first(text: str, names: dict[str, list[re.Pattern[str]]]) -> str | None:
    """The key whose pattern matches earliest in ``text`` (None when none matches)."""
    hits = [
        (m.start(), key)
        for key, patterns in names.items()
        for p in patterns
        for m in p.finditer(text)
    ]
    return min(hits)[1] if hits else None


def _region_patterns() -> dict[str, list[re.Pattern[str]]]:
    patterns = {}
    for region in REGIONS:
        words = [region.name, *region.aliases]
        found = [re.compile(rf"\b{re.escape(w)}\b", re.I) for w in words]
        # the code alone, unless it is a currency next to an amount (EUR 5, 5 EUR)
        found.append(re.compile(rf"(?<![\d,.] )(?<!\d)\b{region.code}\b(?! ?\d)"))
        patterns[region.code] = found
    return patterns


def _model_patterns(brand: str) -> dict[str, list[re.Pattern[str]]]:
    return {
        m.code: [
            re.compile(rf"\b{re.escape(m.code)}\b", re.I),
            re.compile(rf"\b{re.escape(m.name)}\b(?![\d.])", re.I),
            re.compile(rf"\b{re.escape(m.nickname)}\b"),
        ]
        for m in models_of(brand)
    }


def _months() -> dict[int, list[re.Pattern[str]]]:
    return {
        number: [
            re.compile(rf"\b{name}\b|\b{name[:3]}\b\.?"),
            re.compile(rf"\b20\d\d-?{number:02d}\b"),
        ]
        for number, name in enumerate(cal.MONTH_NAMES, start=1)
    }


def numbers_in(text: str) -> list[float]:
    """Every number in ``text`` with its scale word applied ("74.6 million" -> 74600000.0)."""
    values = []
    for match in NUMBER.finditer(text):
        value = float(match.group(1).replace(",", ""))
        scale = (match.group(2) or "").lower()
        values.append(value * SCALE.get(scale, 1.0))
    return values


def check_driver(text: str, expects: dict[str, Any]) -> tuple[bool, str]:
    region = _first(text, _region_patterns())
    model = _first(text, _model_patterns(expects["brand"]))
    found = region == expects["region"] and model == expects["model"]
    return found, f"first region {region}, first model {model}"


def check_peak_month(text: str, expects: dict[str, Any]) -> tuple[bool, str]:
    months = _months()
    for sentence in sentences(text):
        if PEAK_WORDS.search(sentence) and (month := _first(sentence, months)) is not None:
            return month == expects["month"], f"peak sentence names month {month}"
    return False, "no sentence names a peak month"


def check_trend_up(text: str, expects: dict[str, Any]) -> tuple[bool, str]:
    match = DIRECTION.search(text)
    if match is None:
        return False, "no direction word"
    return match.group("up") is not None, f"first direction word {match.group(0)!r}"


def check_forecast(
    text: str, expects: dict[str, Any], findings: Iterable[Any] = ()
) -> tuple[bool, str]:
    low, high = expects["lower"], expects["upper"]
    candidates = [v for s in sentences(text) if FORECAST_WORDS.search(s) for v in numbers_in(s)]
    for finding in findings:
        if isinstance(finding, dict) and FORECAST_WORDS.search(str(finding.get("text", ""))):
            candidates += [float(n) for n in finding.get("numbers") or []]
    inside = [v for v in candidates if low <= v <= high]
    if inside:
        return True, f"forecast {inside[0]:g} in [{low:g}, {high:g}]"
    return False, f"no forecast number in [{low:g}, {high:g}] among {len(candidates)}"


def check_discount_band(text: str, expects: dict[str, Any]) -> tuple[bool, str]:
    low, high = expects["low_pct"], expects["high_pct"]
    for sentence in sentences(text):
        if not DISCOUNT_WORDS.search(sentence):
            continue
        for match in PERCENTS.finditer(sentence):
            value = float(match.group(1) or match.group(3))
            return low <= value < high, f"first discount percentage {match.group(0)!r}"
    return False, "no discount percentage named"


CHECKS = {
    "driver": check_driver,
    "peak_month": check_peak_month,
    "trend_up": check_trend_up,
    "discount_band": check_discount_band,
}


def score_answer(question: dict[str, Any], answer: dict[str, Any] | None) -> Verdict:
    """The verdict on one answer (None: the question was not answered)."""
    expects = question["expects"]
    kind = expects["kind"]
    base = {"id": question["id"], "type": question["type"], "kind": kind}
    if answer is None:
        return Verdict(**base, found=False, why=NO_ANSWER)
    if answer.get("refused"):
        return Verdict(**base, found=False, why=f"refused: {answer['refused']}")
    text = answer_text(answer)
    if kind == "forecast":
        found, why = check_forecast(text, expects, answer.get("findings") or [])
    elif kind in CHECKS:
        found, why = CHECKS[kind](text, expects)
    else:
        raise ValueError(f"question {question['id']}: unknown expected fact kind {kind!r}")
    return Verdict(**base, found=found, why=why)


def _key(question: str) -> str:
    return " ".join(question.lower().split())


def score(questions: list[dict[str, Any]], answers: list[dict[str, Any]]) -> list[Verdict]:
    """One verdict per question, its answer found by ``id`` or else by question text."""
    by_id = {str(a["id"]): a for a in answers if a.get("id") is not None}
    by_text = {_key(str(a.get("question", ""))): a for a in answers}
    return [
        score_answer(q, by_id.get(q["id"]) or by_text.get(_key(q["question"]))) for q in questions
    ]


def shares(verdicts: list[Verdict]) -> dict[str, dict[str, float | int]]:
    """Per question type (and ``all``): found, total and the share found."""
    table: dict[str, dict[str, float | int]] = {}
    for kind in [*TYPES, "all"]:
        chosen = [v for v in verdicts if kind in ("all", v.type)]
        if chosen:
            found = sum(v.found for v in chosen)
            table[kind] = {"found": found, "total": len(chosen), "share": found / len(chosen)}
    return table


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{number}: invalid JSON: {err.msg}") from err
    return rows


def report(verdicts: list[Verdict]) -> str:
    lines = [f"{'type':<13} found  total  share"]
    for kind, row in shares(verdicts).items():
        lines.append(f"{kind:<13} {row['found']:>5}  {row['total']:>5}  {row['share']:.2f}")
    lines.append("")
    lines += [
        f"{v.id} {v.type:<12} {v.kind:<13} {'FOUND' if v.found else 'missed'}: {v.why}"
        for v in verdicts
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.autofin score-longform",
        description="Share of planted AutoFin facts the analysis answers name, per type.",
    )
    parser.add_argument("--questions", type=Path, required=True, help="longform.jsonl")
    parser.add_argument("--answers", type=Path, required=True, help="analysis answers (JSONL)")
    parser.add_argument("--json", type=Path, help="also write the verdicts and shares here")
    parser.add_argument(
        "--answered-only",
        action="store_true",
        help="score only the questions the answers cover (a partial run)",
    )
    args = parser.parse_args(argv)
    verdicts = score(read_jsonl(args.questions), read_jsonl(args.answers))
    if args.answered_only:
        verdicts = [v for v in verdicts if v.why != NO_ANSWER]
    print(report(verdicts))
    if args.json:
        payload = {"shares": shares(verdicts), "verdicts": [asdict(v) for v in verdicts]}
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0
