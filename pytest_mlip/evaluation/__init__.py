"""The one place every model call goes through (see :mod:`.evaluator`)."""

from .evaluator import Evaluation, Evaluator, evaluator_for, all_evaluators

__all__ = ["Evaluation", "Evaluator", "evaluator_for", "all_evaluators"]
