"""The MemPalace adapter against the real mempalace 3.11.0 (its own environment, built by the kit on first
use): the adapter contract, and what is MemPalace's own (its transcript format, its miner's exchange
chunks mapped back to turns by text, the offline embedder under the kit's HOME, a later process)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from locomo_kit.dataset import get_conversation
from locomo_kit.systems import create
from locomo_kit.systems.environments import env_dir
from locomo_kit.systems.mempalace import EMBEDDER_NOTE, render_session
from locomo_kit.systems.specs import MEMPALACE_ENV
from locomo_kit.testing.system_contract import SystemContract

from support.peer_systems import require_toolchain


@pytest.fixture(scope="module")
def mempalace_store(tmp_path_factory) -> Path:
    require_toolchain()
    return tmp_path_factory.mktemp("mempalace")


@pytest.mark.integration  # mempalace's own environment
class TestMemPalaceContract(SystemContract):
    @pytest.fixture(scope="class")
    @classmethod
    def system(cls, mempalace_store):
        with create("mempalace", mempalace_store / "contract") as s:
            yield s


@pytest.fixture(scope="module")
def conv26(dataset):
    conv = get_conversation(dataset, "conv-26")
    return dataclasses.replace(conv, sessions=conv.sessions[:2])


def test_session_rendered_as_a_mempalace_transcript(conv26):
    text = render_session(conv26, conv26.sessions[0])
    lines = [line for line in text.splitlines() if line]
    assert len(lines) == len(conv26.sessions[0].turns)
    for line, turn in zip(lines, conv26.sessions[0].turns):
        assert line.startswith("> ") == (turn.speaker == conv26.speaker_a)
        assert line.lstrip("> ").startswith(f"[8 May 2023] {turn.speaker}: ")


@pytest.mark.integration  # mempalace's own environment
def test_exchange_chunks_map_back_to_their_turns_and_persist(mempalace_store, conv26):
    store = mempalace_store / "own"
    with create("mempalace", store) as s:
        for session in conv26.sessions:
            assert s.ingest_session(conv26, session).stored > 0
        ident = s.identity()
        assert ident.name == "mempalace" and ident.version == "3.11.0"
        assert ident.settings["embedder"] == EMBEDDER_NOTE and "int8" in EMBEDDER_NOTE
        held = s.held("conv-26")
        assert held == 18  # session 1 (18 turns) and 2 (17): one drawer per exchange pair
        turn = conv26.sessions[0].turns[2]  # D1:3, answered by D1:4
        hits = s.search("conv-26", turn.text, 5).memories
        assert hits[0].source_turns == ["D1:3", "D1:4"] and hits[0].session == 1
        assert hits[0].date == conv26.sessions[0].date_time
        assert hits[0].score is None and isinstance(hits[0].metadata["similarity"], float)
    link = store / "home" / ".cache" / "chroma"
    assert link.is_symlink() and link.resolve() == (env_dir(MEMPALACE_ENV) / "chroma-home" / ".cache" /
                                                    "chroma").resolve()
    onnx = link / "onnx_models" / "all-MiniLM-L6-v2" / "onnx"
    assert {p.name for p in onnx.iterdir()} >= {"model.onnx", "tokenizer.json", "vocab.txt"}
    # a later process (locomo-kit answer) maps hits back to turns from what the store kept
    with create("mempalace", store) as later:
        assert later.held("conv-26") == held
        assert later.search("conv-26", turn.text, 1).memories[0].source_turns == ["D1:3", "D1:4"]


def test_unknown_option_is_refused(tmp_path):
    with pytest.raises(ValueError, match="mempalace takes no option colour"):
        create("mempalace", tmp_path, colour="red")

