"""The adapter contract against the real claude-mem Worker (its npm release, scripts/claude-mem-peer),
in turns mode (memory/save: no compressor needed). Without npm it skips and says why (``-ra``)."""

from __future__ import annotations

import pytest

from locomo_kit.systems import create
from locomo_kit.testing.system_contract import SystemContract

from support.claude_mem_peer import real_worker, require_release

pytestmark = pytest.mark.integration  # the real claude-mem Worker from npm


class TestClaudeMem(SystemContract):
    query_strategy = "keywords"  # without its vector store claude-mem matches the whole query as one phrase
    @pytest.fixture(scope="class")
    @classmethod
    def system(cls, tmp_path_factory):
        require_release()
        with real_worker(tmp_path_factory.mktemp("claude-mem-home")) as w:
            with create("claude-mem", tmp_path_factory.mktemp("claude-mem-store"), url=w["url"], mode="turns") as s:
                yield s

    def test_identity_is_the_real_worker(self, system):
        ident = system.identity()
        assert ident.name == "claude-mem" and ident.version and ident.url.startswith("http://127.0.0.1:")
