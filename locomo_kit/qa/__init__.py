"""Answering questions from retrieved memories (or the whole conversation, or the gold evidence)."""

from locomo_kit.qa.answering import AnswerConfig, AnswerRecord, AnswerSummary, QARunner, full_context
from locomo_kit.qa.context import approx_tokens, fit_budget, format_context
from locomo_kit.qa.extractive import ExtractiveAnswerer
from locomo_kit.qa.retrieval import LABELS, STRATEGIES, Retrieval, content_words, retrieve

__all__ = ["AnswerConfig", "AnswerRecord", "AnswerSummary", "ExtractiveAnswerer", "LABELS", "QARunner", "Retrieval",
           "STRATEGIES", "approx_tokens", "content_words", "fit_budget", "format_context", "full_context", "retrieve"]
