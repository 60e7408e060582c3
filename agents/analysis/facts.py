"""What the analysis tools return: small dataclasses of rounded facts a narrative can cite.

Every result says which tool made it and from which evidence (``evidence``: the sub-question
id), gives its facts as a plain dict (``facts()``), every number in them (``numbers()``, what
the number check accepts) and one sentence made only of those numbers (``summary()``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from agents.analysis.numbers import known_numbers


def shown(value: float | None, spec: str = "g") -> str:
    """A fact's number for a summary: formatted by ``spec``, ``n/a`` when None (a value
    :func:`rounded` found not finite, such as the p-value of a constant series); from
    100,000 on with thousands separators instead of an exponent (``1,600,680``, not
    ``1.60068e+06``), the one decimal :func:`rounded` keeps shown when there is one."""
    if value is None:
        return "n/a"
    if spec in ("g", "+g") and abs(value) >= 1e5 and math.isfinite(value):
        sign = "+" if spec == "+g" else ""
        decimals = 0 if float(value).is_integer() else 1
        return format(value, f"{sign},.{decimals}f")
    return format(value, spec)


def rounded(value: Any) -> Any:
    """``value`` rounded sensibly: 4 significant digits, at most 1 decimal from 100 on;
    ints, strings and None as they are."""
    if isinstance(value, bool) or value is None or isinstance(value, int | str):
        return value
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(number):
        return None
    if number == 0:
        return 0.0
    if abs(number) >= 100:
        return round(number, 1)
    digits = 3 - math.floor(math.log10(abs(number)))
    return round(number, digits)


def label(value: Any) -> str:
    """A period or category label as text (a timestamp as its date)."""
    text = str(value)
    return text[:10] if len(text) >= 19 and text[10:19] == " 00:00:00" else text


def leaves(value: Any) -> list[Any]:
    """Every scalar in a nested structure of dicts and lists."""
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in leaves(v)]
    if isinstance(value, list | tuple):
        return [leaf for v in value for leaf in leaves(v)]
    return [value]


@dataclass
class ToolFacts:
    """Base of the tools' results."""

    tool: str = field(default="", init=False)
    evidence: str = field(default="", init=False)

    def facts(self) -> dict[str, Any]:
        return asdict(self)

    def numbers(self) -> list[float]:
        """Every number in the facts, labels (periods, segments) read too, signs dropped."""
        return known_numbers(leaves(self.facts()))

    def summary(self) -> str:
        raise NotImplementedError


@dataclass
class Contribution:
    """One segment's part of a change: its values in the two periods, its change and its
    share of the total change (1.0 = all of it)."""

    segment: str
    previous: float
    last: float
    change: float
    share: float | None


@dataclass
class PeriodChange(ToolFacts):
    measure: str
    previous_period: str
    last_period: str
    previous: float
    last: float
    change: float
    pct_change: float | None
    dimension: str | None = None
    contributions: list[Contribution] = field(default_factory=list)
    averaged_rows: int | None = None  # an average's period value is the mean of these rows

    def __post_init__(self) -> None:
        self.tool = "period_change"

    def summary(self) -> str:
        pct = f" ({shown(self.pct_change, '+g')}%)" if self.pct_change is not None else ""
        # the mean of segments' ratios is not the ratio of the whole: said so
        what = (
            f"the mean {self.measure} of up to {self.averaged_rows} rows a period"
            if self.averaged_rows
            else self.measure
        )
        text = (
            f"{what} went from {shown(self.previous)} in {self.previous_period} to "
            f"{shown(self.last)} in {self.last_period}, "
            f"a change of {shown(self.change, '+g')}{pct}."
        )
        top = self.contributions[0] if self.contributions else None
        if top is not None and top.share is not None:
            text += (
                f" The largest part came from {self.dimension} {top.segment} "
                f"({shown(top.change, '+g')}, {shown(rounded(top.share * 100))}% of the change)."
            )
        elif top is not None and self.change and top.change * self.change > 0:
            # an average: its segments' changes do not add up to it, so no share is said
            text += (
                f" The largest move that way was in {self.dimension} {top.segment} "
                f"({shown(top.change, '+g')})."
            )
        return text


@dataclass
class Outlier:
    label: str
    value: float
    zscore: float


def _stands_out(points: list[Outlier], word: str, measure: str) -> str:
    """One sentence: ``points`` have a ``word`` (higher, lower) ``measure`` than the rest."""
    if len(points) == 1:
        p = points[0]
        return (
            f"{p.label} has a {word} {measure} than the others: "
            f"{shown(p.value)} (z = {shown(p.zscore)})."
        )
    listed = ", ".join(f"{p.label} ({shown(p.value)}, z = {shown(p.zscore)})" for p in points[:-1])
    last = points[-1]
    return (
        f"{listed} and {last.label} ({shown(last.value)}, z = {shown(last.zscore)}) "
        f"have a {word} {measure} than the others."
    )


@dataclass
class Outliers(ToolFacts):
    measure: str
    count: int
    mean: float
    lower_fence: float
    upper_fence: float
    points: list[Outlier] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.tool = "outliers"

    def summary(self) -> str:
        if not self.points:
            return f"No outlier in {self.measure} among {self.count} values."
        shown_points = self.points[:3]
        high = [p for p in shown_points if (p.zscore or 0.0) >= 0]
        low = [p for p in shown_points if (p.zscore or 0.0) < 0]
        mean = f"the mean of the {self.count} values is {shown(self.mean)}"
        sentences = [
            _stands_out(group, word, self.measure)
            for group, word in ((high, "higher"), (low, "lower"))
            if group
        ]
        return " ".join(sentences)[:-1] + f"; {mean}."


@dataclass
class SegmentShare:
    """One segment's value and its share of the total, in percent."""

    segment: str
    value: float
    share_pct: float


@dataclass
class Shares(ToolFacts):
    """How a total splits over a breakdown's segments: the largest and the smallest, against
    an even split (``even_share_pct``: 100 / ``count``; ``top_to_even``: the largest share
    over it, 1.0 for a perfectly even split)."""

    measure: str
    category: str
    total: float
    count: int
    even_share_pct: float
    top: SegmentShare
    bottom: SegmentShare
    top_to_even: float

    def __post_init__(self) -> None:
        self.tool = "shares"

    def summary(self) -> str:
        top, bottom = self.top, self.bottom
        return (
            f"{top.segment} has the largest share of {self.measure}: {shown(top.value)} of "
            f"{shown(self.total)} ({shown(top.share_pct)}%), {shown(self.top_to_even)} times "
            f"an even share ({shown(self.even_share_pct)}% for each of {self.count}); "
            f"{bottom.segment} has the smallest: {shown(bottom.value)} "
            f"({shown(bottom.share_pct)}%)."
        )


@dataclass
class Relation(ToolFacts):
    """How ``y`` moves with ``x`` over a result's rows: Spearman's rank correlation
    (``rho``, its ``p_value``, ``count`` rows with both), and the mean of ``y`` in the lowest
    and the highest quarter of ``x`` (``low_x_up_to``: the lowest quarter's top value of
    ``x``; ``high_x_from``: the highest quarter's bottom one). ``monotonic``: the correlation
    is significant at 5 % and ``|rho|`` is 0.1 or more."""

    x: str
    y: str
    count: int
    rho: float | None
    p_value: float | None
    monotonic: bool
    low_x_up_to: float
    low_mean_y: float
    high_x_from: float
    high_mean_y: float

    def __post_init__(self) -> None:
        self.tool = "relation"

    def summary(self) -> str:
        test = f"Spearman rho = {shown(self.rho)}, p = {shown(self.p_value)}, n = {self.count}"
        if not self.monotonic:
            return f"No monotonic relation between {self.x} and {self.y} ({test})."
        way = "rises" if (self.rho or 0) > 0 else "falls"
        return (
            f"{self.y} {way} as {self.x} rises ({test}): mean {self.y} "
            f"{shown(self.low_mean_y)} where {self.x} is up to {shown(self.low_x_up_to)}, "
            f"{shown(self.high_mean_y)} where it is {shown(self.high_x_from)} or more."
        )


# the STL seasonal strength from which a series is called seasonal (Wang, Smith & Hyndman's
# measure: 0 for none, 1 for a pure cycle; a noisy trend scores well under it)
SEASONAL = 0.4


@dataclass
class TrendSeasonality(ToolFacts):
    count: int
    method: str
    slope: float
    p_value: float
    r_squared: float
    direction: str
    period: int | None = None
    seasonal_strength: float | None = None
    seasonal_amplitude: float | None = None
    peak_position: str | None = None
    measure: str | None = None  # the series' name, when it has one

    def __post_init__(self) -> None:
        self.tool = "trend_seasonality"

    def summary(self) -> str:
        subject = self.measure or "the series"
        trend = {"up": "trends upward", "down": "trends downward"}.get(
            self.direction, "shows no significant trend"
        )
        text = (
            f"Over {self.count} periods {subject} {trend} "
            f"(slope {shown(self.slope)} per period, p = {shown(self.p_value)})."
        )
        if self.seasonal_strength is not None and self.peak_position is not None:
            if self.seasonal_strength >= SEASONAL:
                text += (
                    f" It is seasonal with a cycle of {self.period} periods "
                    f"(strength {shown(self.seasonal_strength)}),"
                    f" peaking in {self.peak_position}."
                )
            else:
                text += (
                    f" It shows no clear seasonality over a cycle of {self.period} periods "
                    f"(strength {shown(self.seasonal_strength)})."
                )
        return text


@dataclass
class ForecastPoint:
    label: str
    value: float
    lower: float
    upper: float


@dataclass
class Forecast(ToolFacts):
    method: str
    count: int
    level: float
    points: list[ForecastPoint] = field(default_factory=list)
    measure: str | None = None  # the series' name, when it has one

    def __post_init__(self) -> None:
        self.tool = "forecast"

    def summary(self) -> str:
        first = self.points[0]
        of = f" of {self.measure}" if self.measure else ""
        return (
            f"The forecast{of} for {first.label} is {shown(first.value)} "
            f"({self.level * 100:g}% interval {shown(first.lower)} to {shown(first.upper)})."
        )


@dataclass
class OptionEffect:
    option: str
    expected_effect: float
    support: int
    low: float | None = None
    high: float | None = None


@dataclass
class RankedOptions(ToolFacts):
    option: str
    effect: str
    options: list[OptionEffect] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.tool = "rank_options"

    def summary(self) -> str:
        best, worst = self.options[0], self.options[-1]
        text = (
            f"By {self.effect}, the best {self.option} is {best.option} "
            f"(expected {shown(best.expected_effect)} over {best.support} rows)"
        )
        if len(self.options) < 2:
            return text + "."
        return text + (  # what to cut or stop is the question as often as what to pick
            f"; the worst is {worst.option} "
            f"(expected {shown(worst.expected_effect)} over {worst.support} rows)."
        )
