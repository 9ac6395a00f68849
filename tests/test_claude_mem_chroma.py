"""The kit against the real claude-mem 13.25.3 Worker *with Chroma* (its vector store), offline.

Heavier than the other real-Worker tests (a one-time setup of about 45 s and 675 MB, then
Chroma's asynchronous indexing), so opt-in: ``LOCOMO_TEST_CHROMA=1 make test`` (or
``LOCOMO_TEST_CHROMA=1 .venv/bin/python -m pytest tests/test_claude_mem_chroma.py``).
"""

from __future__ import annotations

import os

import pytest

from locomo_kit.cli import main
from locomo_kit.runs import RunFolder
from locomo_kit.worker.client import WorkerClient

from support.claude_mem_compressor import CompressorStandin
from support.claude_mem_peer import real_worker, require_release

pytestmark = [pytest.mark.integration,  # the real claude-mem Worker from npm, with Chroma
              pytest.mark.skipif(os.environ.get("LOCOMO_TEST_CHROMA") != "1",
                                 reason="opt-in: set LOCOMO_TEST_CHROMA=1 to run claude-mem with Chroma "
                                 "(one-time setup ~45 s, 675 MB)")]


@pytest.fixture(autouse=True)
def isolated_outputs(own_outputs, dataset_path):
    return own_outputs


def test_semantic_search_finds_whole_questions_after_the_index_is_consistent(tmp_path, capsys):
    require_release(chroma=True)
    with CompressorStandin() as comp, real_worker(tmp_path / "home", comp.base_url, chroma=True) as w:
        url = w["url"]
        with WorkerClient(url) as c:
            assert c._request("GET", "/api/chroma/status")["connected"] is True
        assert main(["ingest", "--sample", "conv-26", "--worker-url", url, "--run-id", "c"]) == 0
        m = RunFolder("c").manifest()
        assert m["worker"]["semantic_search"] == "available"
        cons = m["consistency"]
        assert cons["consistent"] is True and cons["probes"] == 10 and cons["seconds"] >= 0
        # the question as the query, as an agent sends it, now finds memories
        assert main(["verify", "--sample", "conv-26", "--worker-url", url, "--run-id", "c"]) == 0
    out = capsys.readouterr().out
    assert "read-your-writes: the Worker found all 10 sampled memories" in out
