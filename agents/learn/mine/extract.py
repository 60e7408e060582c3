"""Mining one labeled experience: its SQL's facts, paired with the question's phrases.

In order, each step claiming the question words it pairs (no word names two things):

0. **periods** and **comparisons** first (their literals are no values to name):
   a time phrase paired with the date filter covering the same days ("last month" →
   ``period`` = the month before the query's month; "in 2024" → ``year = 2024``; see
   :mod:`agents.learn.mine.periods`), and a number compared with a column, mined as the
   phrase naming the column ("more than 5,000 **people**" → ``population``, the number
   left to the next question; see :mod:`agents.learn.mine.numbers`). A period outside the
   column's profiled range, or a comparison on a column that is not numeric, is dropped.
1. **values**: a text literal of ``=``, ``IN`` or ``LIKE`` is checked against the column
   (:meth:`SchemaView.value_check`), then found in the question verbatim or as initials. A
   value with an enum entry gets a synonym of that enum ("NC" → ``state_name = 'north
   carolina'``); a value without one, a predicate named by the phrase ("houston" →
   ``city.city_name = 'houston'``).
2. **formulas**: arithmetic over columns becomes a metric named by the question's run of
   words holding a word of its columns ("population density").
3. **columns** read by the query (not join keys, not filtered by a value, not inside a
   formula) get a synonym from the uncovered run that shares a word stem with their name.
4. **tables** likewise, when a run names them.
5. **joins** between two tables with no declared foreign key become join knowledge, when
   the two columns share values (:meth:`SchemaView.overlap`; a join of disjoint columns,
   ``river.traverse = state.capital``, is dropped).
6. What is left unpaired goes to the ``pairer`` (the LLM) when one is given.

Already-known phrases (the string index's matches) are never learned again; an element the
question names by a known phrase counts as *known*. Bad input never raises: an experience
without SQL, with SQL that does not parse or naming a table the profile lacks is *skipped*
with its reason; a fact naming an unknown column or value is *dropped* and counted.
"""

from __future__ import annotations

from agents.learn.mine import entries
from agents.learn.mine.align import Phrase, QuestionView
from agents.learn.mine.extract_numbers import NumberSteps
from agents.learn.mine.extract_state import VALUE_OPS, ExperienceMining
from agents.learn.mine.pairer import Pairer
from agents.learn.mine.schema_view import SchemaView
from agents.learn.mine.sql_facts import ColumnRef, PredicateFact, SqlFactsError, sql_facts
from indices.normalize import Lemmatizer
from indices.string import StringIndex
from kb.target.sql_guard import sqlglot_dialect
from ukf import BaseUKF, ExperienceUKF

__all__ = ["ExperienceMining", "mine_experience"]


class _ExperienceMiner(NumberSteps):
    """Steps 1 to 6 of the module docstring (step 0 in :class:`NumberSteps`)."""

    def values(self) -> None:
        for pred in self.facts.predicates:
            if not pred.is_text or pred.op not in VALUE_OPS or pred in self.claimed:
                continue
            column = self.column((pred.table, pred.column))
            if column is None:
                continue
            for value in map(str, pred.values):
                self._value(pred, column, value)

    def _value(self, pred: PredicateFact, column: BaseUKF, value: str) -> None:
        r = column.content_resources
        words = value.strip("%") if pred.op == "LIKE" else value
        if pred.op != "LIKE":
            check = self.view.value_check(column, value)
            if check == "missing":
                self.out.dropped["unknown_value"] += 1
                return
            self.out.unchecked_values += check == "unchecked"
        op = "=" if pred.op == "IN" else pred.op
        condition = PredicateFact(r["table"], r["column"], op, (value,), True).condition()
        how, phrase = "verbatim", self.q.find_value(words)
        if phrase is None:
            how, phrase = "initials", self.q.find_initials(words)
        if phrase is None:
            self.park("value", condition, column, condition=condition, value=value)
            return
        self._value_entry(phrase, column, value, condition, how)

    def _value_entry(
        self, phrase: Phrase, column: BaseUKF, value: str, condition: str, how: str
    ) -> None:
        enum = self.view.enum(column, value) if "LIKE" not in condition else None
        if self.q.is_covered(phrase) or (enum is not None and how == "verbatim"):
            self.q.claim(phrase)  # an enum's own name is indexed: known
            self.out.known += 1
            return
        if enum is not None:
            self.emit(entries.synonym(phrase.text, enum, condition, self.prov, how), phrase)
        else:
            self.emit(entries.predicate(phrase.text, condition, column, self.prov, how), phrase)

    def formulas(self) -> None:
        for formula in self.facts.formulas:
            columns = [self.column(ref) for ref in formula.columns]
            found = [c for c in columns if c is not None]
            if len(found) != len(columns):
                continue
            phrase = self.q.align(*(c.name for c in found), across_known=True)
            if phrase is None:
                self.park("formula", formula.sql, found[0], extra=found)
                continue
            self._metric(phrase, formula.sql, found, "lexical")

    def _metric(self, phrase: Phrase, formula: str, columns: list[BaseUKF], how: str) -> None:
        self.emit(entries.metric(phrase.text, formula, columns, self.prov, how), phrase)

    def columns(self) -> None:
        """Columns named for themselves: not join keys, not filtered by a text value (the
        value names them), not inside a formula (the metric does)."""
        implied: list[ColumnRef] = [(j.left, j.left_column) for j in self.facts.joins]
        implied += [(j.right, j.right_column) for j in self.facts.joins]
        implied += [(p.table, p.column) for p in self.facts.predicates if p.is_text]
        implied += [ref for formula in self.facts.formulas for ref in formula.columns]
        skip = {self._id_of(ref) for ref in implied} | self.named
        for ref in self.facts.columns:
            column = self.column(ref)
            if column is not None and column.id not in skip:
                skip.add(column.id)
                self._named(column, "column")

    def _id_of(self, ref: ColumnRef) -> str | None:
        found = self.view.column(ref[0], ref[1], among=self.facts.tables)
        return found.id if found is not None else None

    def tables(self) -> None:
        for name in self.facts.tables:
            table = self.view.table(name)
            if table is not None and table.id not in self.known_ids:
                phrase = self.q.align(table.name)
                if phrase is not None and not self.is_own_name(phrase, table.name):
                    label = entries.qualified(table)
                    self.emit(
                        entries.synonym(phrase.text, table, label, self.prov, "lexical"), phrase
                    )
                elif phrase is not None:
                    self.out.known += 1

    def _named(self, element: BaseUKF, kind: str) -> None:
        if element.id in self.known_ids:
            self.out.known += 1
            return
        phrase = self.q.align(element.name)
        if phrase is None:
            self.park(kind, entries.qualified(element), element)
        elif self.is_own_name(phrase, element.name):
            self.q.claim(phrase)
            self.out.known += 1
        else:
            label = entries.qualified(element)
            self.emit(entries.synonym(phrase.text, element, label, self.prov, "lexical"), phrase)

    def joins(self) -> None:
        for join in self.facts.joins:
            left, right = self.view.table(join.left), self.view.table(join.right)
            lc = self.column((join.left, join.left_column))
            rc = self.column((join.right, join.right_column))
            if left is None or right is None or lc is None or rc is None:
                continue
            if self.view.declared_join(
                (join.left, join.left_column), (join.right, join.right_column)
            ):
                self.out.known += 1
                continue
            overlap = self.view.overlap(lc, rc)
            if overlap == "disjoint":
                self.out.dropped["join_values_disjoint"] += 1
                continue
            self.out.unchecked_values += overlap == "unchecked"
            self.emit(entries.join(left, lc.name, right, rc.name, self.prov))

    def ask_pairer(self, pairer: Pairer | None) -> None:
        if not self.pending:
            return
        options = {p.text: p for p in self.q.options()}
        answer = (
            pairer.pair(
                self.experience.question,
                self.facts.sql,
                [p.item for p in self.pending],
                list(options),
            )
            if pairer is not None and options
            else {}
        )
        for pending in self.pending:
            phrase = options.get(answer.get(pending.item.key, ""))
            if phrase is None:
                self.out.unpaired += 1
                continue
            target, kind = pending.target, pending.item.kind
            if kind == "value":
                self._value_entry(phrase, target, pending.value, pending.condition, "llm")
            elif kind == "formula":
                self._metric(phrase, pending.item.label, pending.extra, "llm")
            elif self.is_own_name(phrase, target.name):
                self.out.known += 1
            else:
                label = pending.item.label
                self.emit(entries.synonym(phrase.text, target, label, self.prov, "llm"), phrase)


def mine_experience(
    experience: ExperienceUKF,
    view: SchemaView,
    *,
    job_id: str,
    miner: str = "labeled",
    strings: StringIndex | None = None,
    lemmatizer: Lemmatizer | None = None,
    pairer: Pairer | None = None,
    dialect: str = "sqlite",
) -> ExperienceMining:
    """Mine one experience (see the module docstring); never raises for bad input."""
    sql = experience.sql
    if not sql:
        return ExperienceMining(experience.id, skipped="no SQL")
    dialect = sqlglot_dialect(experience.content_resources.get("dialect") or dialect)
    try:
        facts = sql_facts(sql, dialect)
    except SqlFactsError as exc:
        return ExperienceMining(experience.id, skipped=f"SQL does not parse: {exc}")
    missing = [t for t in facts.tables if view.table(t) is None]
    if missing:
        return ExperienceMining(
            experience.id, skipped=f"table(s) {missing} not in the profile of {view.database!r}"
        )
    question = QuestionView(experience.question, strings, lemmatizer)
    prov = entries.Provenance(job_id, miner, experience, view.database)
    miner_ = _ExperienceMiner(experience, facts, view, question, prov)
    miner_.periods()
    miner_.comparisons()
    miner_.values()
    miner_.formulas()
    miner_.columns()
    miner_.tables()
    miner_.joins()
    miner_.ask_pairer(pairer)
    return miner_.out
