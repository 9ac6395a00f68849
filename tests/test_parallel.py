"""Jobs in processes of their own (locomo_kit.pipeline.parallel): results, failures, lines, the default count."""

from __future__ import annotations

import io
import os
import re
from dataclasses import replace

import pytest

from locomo_kit.cli import main
from locomo_kit.llm.execute import CallSettings
from locomo_kit.pipeline.parallel import (
    ASSUMED_MIB,
    PEAK_MIB,
    Job,
    Lines,
    ParallelError,
    PlanAnswer,
    check_jobs,
    default_jobs,
    job_calls,
    run_jobs,
    start_order,
)

from support import parallel_jobs


def test_each_job_runs_in_its_own_process_and_a_failure_stays_its_own():
    out = io.StringIO()
    jobs = [Job("a", call=parallel_jobs.report_pid, kwargs={"word": "alpha"}), Job("fails", parallel_jobs.fail),
            Job("dies", call=parallel_jobs.die, kwargs={"code": 3}), Job("b", call=parallel_jobs.report_pid, kwargs={"word": "beta"})]
    results = run_jobs(jobs, workers=2, lines=Lines([j.name for j in jobs], out=out, live=False))
    assert [r.name for r in results] == ["a", "fails", "dies", "b"]
    a, fails, dies, b = results
    assert a.value["word"] == "ALPHA" and b.value["word"] == "BETA" and a.error is None
    assert len({a.value["pid"], b.value["pid"], os.getpid()}) == 3
    assert fails.value is None and fails.error == "ValueError: this job fails on purpose"
    assert dies.error.startswith("its process ended with exit code 3")
    assert a.peak_rss_mib and a.peak_rss_mib > 10  # a Python process's peak, measured in the job
    text = out.getvalue()
    assert "a     | working on alpha" in text and "fails | about to fail" in text
    assert "fails | FAILED: ValueError: this job fails on purpose" in text and "a     | done in" in text


def test_a_jobs_cpu_seconds_count_the_children_it_started():
    out = io.StringIO()
    [busy] = run_jobs([Job("busy", call=parallel_jobs.busy_child, kwargs={"seconds": 0.6})], workers=1,
                      lines=Lines(["busy"], out=out, live=False))
    assert busy.error is None and busy.cpu_s is not None and busy.cpu_s >= 0.6  # its host-like child's CPU included
    assert re.search(r"busy \| done in [\d,]+ s, [\d,]+ CPU-s, peak [\d,]+ MiB", out.getvalue())


def test_the_live_console_keeps_one_line_per_job():
    out = io.StringIO()
    lines = Lines(["memworker", "bm25"], out=out, live=True)
    lines.set("bm25", "ingest ok")
    lines.set("memworker", "answer ok")
    frames = out.getvalue().split("\x1b[2F")
    assert len(frames) == 2  # the second draw went back over the first block
    assert frames[-1].count("\n") == 2 and "memworker | answer ok" in frames[-1] and "bm25      | ingest ok" in frames[-1]


def test_the_default_is_the_cores_capped_by_memory_and_by_the_systems():
    assert default_jobs(["memworker", "bm25", "dense"], cpu=16, memory_mib=64_000) == 3
    assert default_jobs(["memworker", "bm25", "dense"], cpu=2, memory_mib=64_000) == 2
    need = max(PEAK_MIB[n] for n in ("memworker", "bm25", "dense"))
    assert default_jobs(["memworker", "bm25", "dense"], cpu=8, memory_mib=2.5 * need / 0.8) == 2
    assert default_jobs(["mempalace", "mem0"], cpu=8, memory_mib=100) == 1  # never fewer than one
    # a system not measured counts as ASSUMED_MIB
    assert default_jobs(["mcp:somewhere", "dense", "bm25"], cpu=8, memory_mib=2.5 * ASSUMED_MIB / 0.8) == 2


def test_a_system_that_splits_its_conversations_counts_its_peak_once_a_process():
    five = ["memworker", "mempalace", "mem0", "bm25", "dense"]
    palace, largest = PEAK_MIB["mempalace"], max(PEAK_MIB[n] for n in five)
    # N jobs at once, the last MemPalace's split over N processes: N - 1 of the largest beside N of MemPalace's
    for n in (2, 3, 4):
        just = ((n - 1) * largest + n * palace) / 0.8
        assert default_jobs(five, apart={"mempalace"}, cpu=16, memory_mib=just) == n
        assert default_jobs(five, apart={"mempalace"}, cpu=16, memory_mib=just - 1) == n - 1
    # one system alone: its conversations take the cores (not capped by the one system)
    assert default_jobs(["mempalace"], apart={"mempalace"}, cpu=4, memory_mib=64_000) == 4
    assert default_jobs(["mempalace"], cpu=4, memory_mib=64_000) == 1  # one conversation: nothing to split


def test_jobs_in_one_process_start_longest_first_and_those_split_by_conversation_last():
    five = ["memworker", "mempalace", "mem0", "bm25", "dense"]
    assert start_order(five) == ["mempalace", "mem0", "dense", "memworker", "bm25"]
    # MemPalace's and Mem0's conversations run in processes of their own: they fill the cores at the end
    assert start_order(five, apart={"mempalace", "mem0"}) == ["dense", "memworker", "bm25", "mem0", "mempalace"]
    assert start_order(["bm25", "mcp:somewhere", "memworker"]) == ["mcp:somewhere", "memworker", "bm25"]


def test_only_the_last_job_to_start_splits_its_conversations():
    from locomo_kit.pipeline.leaderboard import BoardSettings, Entry, each_job_settings
    from locomo_kit.settings import Answerer, Judge, Retrieval

    board = BoardSettings(sample="all", retrievals=(Retrieval(),), answerer=Answerer(), judge=Judge(),
                          calls=CallSettings(jobs=3))
    started = [Entry("dense"), Entry("mem0"), Entry("mempalace")]
    assert [s.calls.jobs for s in each_job_settings(started, settings=board)] == [1, 1, 3]
    assert [s.calls for s in each_job_settings(started, settings=replace(board, calls=None))] == [None] * 3


def test_a_bad_jobs_count_is_refused(capsys):
    with pytest.raises(ParallelError, match="1 or more"):
        check_jobs(0)
    with pytest.raises(SystemExit):
        main(["leaderboard", "--systems", "bm25", "--jobs", "0"])
    assert "--jobs: must be from 1 to 64" in capsys.readouterr().err


def test_a_job_cannot_ask_to_spend():
    asked = CallSettings(confirm=lambda plan: True)  # a terminal's question: not for a job's process
    calls = job_calls(asked)
    with pytest.raises(ParallelError, match="pass --yes"):
        calls.confirm("about $1.20 for 300 calls")
    assert job_calls(replace(asked, confirm=PlanAnswer(yes=True))).confirm("about $1.20") is True
    assert job_calls(CallSettings()).confirm is None and job_calls(None) is None
