"""Step 0 of mining one experience: periods and comparisons (:mod:`agents.learn.mine.extract`).

Their literals are no values to name, so they are read before the values: a time phrase
paired with the date filter covering the same days (:mod:`agents.learn.mine.periods`), and a
number compared with a column, mined as the phrase naming the column
(:mod:`agents.learn.mine.numbers`).
"""

from __future__ import annotations

from agents.learn.mine import day_spans, entries
from agents.learn.mine import periods as time_periods
from agents.learn.mine.align import Phrase, name_lemmas
from agents.learn.mine.extract_state import MinerState, phrase_key
from agents.learn.mine.numbers import (
    NumberMention,
    is_threshold,
    match_comparison,
    number_mentions,
)
from agents.learn.mine.sql_facts import PredicateFact
from ukf import BaseUKF


class NumberSteps(MinerState):
    """The period and comparison steps (see the module docstring)."""

    def periods(self) -> None:
        when = self.experience.context.aware_query_time or self.experience.timestamp
        calendar = self.view.calendar
        phrases = time_periods.period_phrases(self.experience.question, when, calendar)
        found = time_periods.column_periods(self.facts.predicates)
        for match in time_periods.match_periods(phrases, found, calendar):
            self.claimed.update(match.period.predicates)
            said = match.phrase
            self.q.claim(Phrase(said.text, said.start, said.end, ()))
            if said.kind == "period":  # "period 202307": the phrase is the value itself
                self.out.known += 1
                continue
            column = self.column((match.period.table, match.period.column))
            if column is None:
                continue
            check = day_spans.range_check(self.view.value_range(column), match.period.span)
            if check == "missing":
                self.out.dropped["period_out_of_range"] += 1
                continue
            self.out.unchecked_values += check == "unchecked"
            self.named.add(column.id)
            self.emit(time_periods.period_entry(match, column, self.prov, self.view.calendar, when))

    def comparisons(self) -> None:
        mentions = number_mentions(self.experience.question)
        for pred in self.facts.predicates:
            if pred in self.claimed:
                continue
            mention = match_comparison(pred, mentions)
            if mention is None and not is_threshold(pred, mentions):
                continue
            self.claimed.add(pred)
            column = self.column((pred.table, pred.column))
            if column is None:
                continue
            if not self.view.is_numeric(column):
                self.out.dropped["comparison_not_numeric"] += 1
            elif mention is None:
                self._threshold(pred, column)
            else:
                mentions.remove(mention)
                self._comparison(pred, mention, column)

    def _threshold(self, pred: PredicateFact, column: BaseUKF) -> None:
        """A constant the question does not say: the word before the table's name is its
        phrase ("**major** cities" → ``city.population > 150000``)."""
        table = column.content_resources["table"]
        phrase = self.q.word_before(name_lemmas(table, self.q.lemmatizer))
        before = self.q.question[: phrase.start].split()[-1:] if phrase else []
        if phrase is None or [w.casefold() for w in before] in (["not"], ["no"], ["non"]):
            self.out.unpaired += 1  # unnamed, or negated ("not major cities": <= 150000)
            return
        condition = pred.condition(table)
        resources = {"column": entries.qualified(column), "op": pred.op, "value": pred.values[0]}
        self.named.add(column.id)
        self.emit(entries.comparison(phrase.text, condition, column, resources, self.prov), phrase)

    def _comparison(self, pred: PredicateFact, mention: NumberMention, column: BaseUKF) -> None:
        qualified = entries.qualified(column)
        example = f"{mention.comparator} {mention.text}".strip()
        if mention.comparator and not mention.generic:
            phrase = Phrase(mention.comparator, mention.comparator_start, mention.start, ())
            condition = f"{qualified} {pred.op} N (N: the number after {mention.comparator!r})"
            resources = {"column": qualified, "op": pred.op, "comparator": mention.comparator}
        else:
            unit = self.q.words_after(mention.end)
            if unit is None:  # "population over 10 million": the column names itself, or not
                if self.q.align(column.name) is None:
                    self.out.unpaired += 1
                else:
                    self.out.known += 1
                return
            if self.q.is_covered(unit) or self.is_own_name(unit, column.name):
                self.q.claim(unit)
                self.out.known += 1
                return
            phrase = unit
            example += f" {unit.text}"
            condition = f"{qualified} compared with N, the number of {unit.text!r} asked about"
            resources = {"column": qualified, "unit": phrase_key(unit.text)}
        self.named.add(column.id)
        description = f"e.g. {example!r} → {pred.condition(column.content_resources['table'])}"
        entry = entries.comparison(
            phrase.text, condition, column, resources, self.prov, description=description
        )
        self.emit(entry, phrase)
