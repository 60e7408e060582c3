"""The prior: a fixed, hand-set logistic model of P(answer correct) from a few robust signals.

It is what an install uses before it has data: until enough verified answers exist to fit a
calibrator (``agents.confidence.calibrator.fit_calibrator``), the confidence comes from this
model, and it is replaced as soon as they do. Its coefficients are chosen by reasoning, not
fitted; each is explained where it is set. The probabilities are therefore only roughly
calibrated; what the prior must get right is the ordering (a good-looking answer above a
bad-looking one).

The model is

    P = sigmoid(INTERCEPT + sum_t coefficient_t * (clip(x_t, low_t, high_t) - centre_t))

over the terms below. A signal missing from the features contributes nothing (it sits at its
centre), so an answer with no signals at all gets sigmoid(INTERCEPT). ``vote_share`` is read
only when more than one sample voted (``samples`` > 1): with one sample it is always 1 and
says nothing. Non-finite and non-numeric values count as missing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

# Changes whenever a coefficient below changes; saved with a prior calibrator.
PRIOR_VERSION = 1

# An answer with no signals: about 62 %, a guess at the pipeline's typical accuracy, so
# "know nothing" says "probably right, not sure" rather than either extreme.
INTERCEPT = 0.5


@dataclass(frozen=True)
class PriorTerm:
    """One signal's part in the prior: ``coefficient * (clip(x, low, high) - centre)``."""

    name: str
    coefficient: float
    centre: float
    low: float
    high: float


TERMS: tuple[PriorTerm, ...] = (
    # Agreement of the samples' results is the strongest single signal (self-consistency):
    # unanimity (1.0) adds 1.2, a third of the votes (0.33) takes 0.8 away.
    PriorTerm("vote_share", 3.0, centre=0.6, low=0.0, high=1.0),
    # Mean token log probability: a fluent, sure generation (-0.05) adds about 0.4, a hesitant
    # one (-1.0) takes 1.05 away; clipped at -2 so one garbled generation cannot dominate.
    PriorTerm("logprob_mean", 1.5, centre=-0.3, low=-2.0, high=0.0),
    # An empty result is the typical symptom of a wrong filter value or join.
    PriorTerm("empty_result", -2.0, centre=0.0, low=0.0, high=1.0),
    # All-NULL or a lone zero/NULL aggregate: usually a wrong column or a filter that matched
    # nothing, slightly less telling than an empty result.
    PriorTerm("degenerate_result", -1.5, centre=0.0, low=0.0, high=1.0),
    # The result's shape (one value vs. a list, number of columns) differs from what the
    # question asks for: often the wrong projection, sometimes harmless extra columns.
    PriorTerm("shape_mismatch", -1.0, centre=0.0, low=0.0, high=1.0),
    # Each content word of the question that nothing in the knowledge base or schema matched
    # is a constraint the SQL may have ignored: 0.5 each, at most 4 counted.
    PriorTerm("unmatched_content_words", -0.5, centre=0.0, low=0.0, high=4.0),
    # Share of the question covered by matched spans: full coverage adds 0.45, none takes
    # 1.05 away.
    PriorTerm("span_coverage", 1.5, centre=0.7, low=0.0, high=1.0),
    # The pipeline fell back to plain generation (no knowledge, no examples): weaker answers.
    PriorTerm("plain_fallback", -1.0, centre=0.0, low=0.0, high=1.0),
    # Each repair round means the first SQL failed; repaired SQL runs but is right less
    # often: 0.4 per round, at most 3 counted.
    PriorTerm("repairs", -0.4, centre=0.0, low=0.0, high=3.0),
)


def _number(raw: object) -> float | None:
    try:
        value = float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _value(features: Mapping[str, float], name: str) -> float | None:
    value = _number(features.get(name))
    if name == "vote_share":
        samples = _number(features.get("samples"))
        if samples is None or samples <= 1:
            return None
    return value


def prior_logit(features: Mapping[str, float]) -> float:
    """The prior's log odds of the answer being correct (see the module docstring)."""
    z = INTERCEPT
    for term in TERMS:
        value = _value(features, term.name)
        if value is not None:
            z += term.coefficient * (min(max(value, term.low), term.high) - term.centre)
    return z


def prior_probability(features: Mapping[str, float]) -> float:
    """The prior's P(answer correct), in (0, 1)."""
    z = prior_logit(features)
    return 1.0 / (1.0 + math.exp(-z))


def prior_features() -> list[str]:
    """The signal names the prior reads (``samples`` only to decide whether to read
    ``vote_share``)."""
    return [term.name for term in TERMS] + ["samples"]
