"""Answering questions from retrieved memories (or the whole conversation)."""
