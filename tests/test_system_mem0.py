"""The Mem0 adapter against the real mem0ai 2.2.1 (its own environment, built by the kit on first use):
the adapter contract without an LLM (``infer=False``, labelled "Mem0 without LLM extraction"), and
``infer=True`` against a loopback stand-in of the OpenAI chat API that answers Mem0's extraction prompt
the way a model does (a JSON object of memories)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from locomo_kit.dataset import get_conversation
from locomo_kit.systems import create
from locomo_kit.systems.base import MemorySystemError
from locomo_kit.systems.mem0 import NO_LLM_LABEL
from locomo_kit.testing.system_contract import SystemContract

from support.claude_mem_standin import serve
from support.llm_standins import Script, openai_app, openai_completion
from support.peer_systems import require_toolchain

TURN_LINE = re.compile(r"\[(\d{1,2} \w+ \d{4})\] ([^:\n]+): ([^\n]+)")


@pytest.fixture(scope="module")
def mem0_store(tmp_path_factory) -> Path:
    require_toolchain()
    return tmp_path_factory.mktemp("mem0")


@pytest.mark.integration  # mem0's own environment
class TestMem0Contract(SystemContract):
    @pytest.fixture(scope="class")
    @classmethod
    def system(cls, mem0_store):
        with create("mem0", mem0_store / "contract") as s:
            yield s

    def test_labelled_without_llm_extraction(self, system):
        ident = system.identity()
        assert ident.name == "mem0" and ident.version == "2.2.1"
        assert ident.settings["label"] == NO_LLM_LABEL and ident.settings["infer"] is False
        assert "LLM fact extraction" in ident.settings["switched_off_offline"]
        assert system.health().detail == NO_LLM_LABEL


class ExtractingScript(Script):
    """Answers Mem0's extraction request as a model would: one memory per new turn line in the prompt."""

    def __init__(self) -> None:
        super().__init__([(200, openai_completion("{}"))])

    def next(self) -> tuple[int, dict]:
        prompt = self.requests[-1]["body"]["messages"][-1]["content"]
        new = prompt.rsplit("New Messages", 1)[-1] if "New Messages" in prompt else prompt
        facts = [{"id": str(i), "text": f"On {d} {who} said: {what}", "attributed_to": "user"}
                 for i, (d, who, what) in enumerate(TURN_LINE.findall(new)[-1:])]
        return 200, openai_completion(json.dumps({"memory": facts}))


@pytest.fixture(scope="module")
def two_sessions(dataset):
    conv = get_conversation(dataset, "conv-26")
    first = dataclasses.replace(conv.sessions[0], turns=conv.sessions[0].turns[:4])
    return dataclasses.replace(conv, sessions=(first,))


@pytest.mark.integration  # mem0's own environment
def test_infer_true_with_an_openai_compatible_llm(mem0_store, two_sessions):
    script = ExtractingScript()
    conv = two_sessions
    session = conv.sessions[0]
    with serve(openai_app(script)) as url:
        with create("mem0", mem0_store / "llm", llm_base_url=f"{url}/v1", llm_model="local-model") as s:
            ident = s.identity()
            assert ident.settings["infer"] is True and ident.settings["label"] == "Mem0 with LLM extraction (local-model)"
            assert "LLM fact extraction" not in ident.settings["switched_off_offline"]
            out = s.ingest_session(conv, session)
            assert out.stored == len(session.turns)
            assert len(script.requests) == len(session.turns)  # one extraction call per turn
            body = script.requests[0]["body"]
            assert body["model"] == "local-model" and body["response_format"] == {"type": "json_object"}
            assert body["messages"][0]["role"] == "system" and "memor" in body["messages"][0]["content"].lower()
            assert session.turns[0].text[:40] in body["messages"][-1]["content"]
            turn = session.turns[1]
            hits = s.search(conv.sample_id, turn.text, 3).memories
            assert hits[0].text == f"On 8 May 2023 {turn.speaker} said: {turn.text}"  # what the LLM extracted
            assert hits[0].source_turns == [turn.dia_id] and hits[0].session == 1
            calls = len(script.requests)
            assert s.ingest_session(conv, session).stored == len(session.turns)  # a resume adds nothing
            assert len(script.requests) == calls and s.held(conv.sample_id) == len(session.turns)


@pytest.mark.integration  # mem0's own environment
def test_llm_failure_is_a_clear_error(mem0_store, two_sessions):
    script = Script([(500, {"error": {"message": "model crashed", "type": "server_error"}})])
    with serve(openai_app(script)) as url:
        with create("mem0", mem0_store / "llm-down", llm_base_url=f"{url}/v1") as s:
            with pytest.raises(MemorySystemError, match=r"mem0: ingest failed inside the system: .*LLM extraction failed"):
                s.ingest_session(two_sessions, two_sessions.sessions[0])
            assert s.health().ok  # the host survives a failed call


def test_unknown_option_is_refused(tmp_path):
    with pytest.raises(ValueError, match="mem0 takes no option top_p"):
        create("mem0", tmp_path, top_p=0.9)
