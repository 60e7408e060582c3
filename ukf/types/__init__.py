"""UKF templates: one class per knowledge type, each with a ``create`` constructor."""

from ukf.types.experience import ExperienceUKF
from ukf.types.knowledge import DocumentUKF, KnowledgeUKF
from ukf.types.schema import ColumnUKF, EnumUKF, ForeignKey, TableUKF
from ukf.types.semantics import MetricUKF, PredicateUKF, RuleUKF, SynonymUKF, TaxonomyUKF

__all__ = [
    "ColumnUKF",
    "DocumentUKF",
    "EnumUKF",
    "ExperienceUKF",
    "ForeignKey",
    "KnowledgeUKF",
    "MetricUKF",
    "PredicateUKF",
    "RuleUKF",
    "SynonymUKF",
    "TableUKF",
    "TaxonomyUKF",
]
