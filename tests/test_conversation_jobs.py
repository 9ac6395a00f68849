"""A system's conversations in several processes (``leaderboard --jobs`` where each conversation has a store of its
own): how they are grouped, when they are split, what a failing process does, and MemPalace's records with two
processes against one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from locomo_kit.cli import main
from locomo_kit.pipeline.conversation_jobs import conversation_groups, in_processes, splits
from locomo_kit.systems.runner import resolve_system
from locomo_kit.testing.same_results import results

from support.peer_systems import require_toolchain
from support.runs import interruptible, offline_outputs


def _work(c) -> int:
    return len(c.sessions) * 10 + len(c.questions)


def test_groups_hold_each_conversation_once_in_order_and_about_equal_work(dataset):
    for jobs in (2, 3, 4):
        groups = conversation_groups(dataset, jobs=jobs)
        assert len(groups) == jobs
        assert sorted(c.sample_id for g in groups for c in g) == sorted(c.sample_id for c in dataset)
        order = [c.sample_id for c in dataset]
        for g in groups:
            assert [order.index(c.sample_id) for c in g] == sorted(order.index(c.sample_id) for c in g)
        loads = [sum(_work(c) for c in g) for g in groups]
        assert max(loads) - min(loads) <= max(_work(c) for c in dataset)
    assert [[c.sample_id for c in g] for g in conversation_groups(dataset[:2], jobs=8)] == [["conv-26"], ["conv-30"]]


def test_only_systems_whose_conversations_are_apart_are_split_and_only_when_asked(dataset):
    two = dataset[:2]
    assert splits(resolve_system("mempalace"), conversations=two, jobs=2)
    assert splits(resolve_system("mem0"), conversations=two, jobs=2)
    assert not splits(resolve_system("mempalace"), conversations=two, jobs=1)
    assert not splits(resolve_system("mempalace"), conversations=two, jobs=None)
    assert not splits(resolve_system("mempalace"), conversations=two[:1], jobs=2)
    for shared_store in ("memworker", "bm25", "dense"):  # one store (a database) for every conversation
        assert not splits(resolve_system(shared_store), conversations=two, jobs=2)


def _ids(group, *, fail: str | None = None, exit_code: int | None = None) -> list[str]:
    ids = [c.sample_id for c in group]
    if fail in ids:
        raise ValueError(f"{fail} is refused")
    if exit_code is not None and "conv-30" in ids:
        os._exit(exit_code)
    return ids


def test_each_group_runs_in_a_process_of_its_own_and_its_results_come_back_in_order(dataset):
    groups = conversation_groups(dataset[:4], jobs=2)
    assert in_processes(_ids, groups=groups, kwargs={}) == [[c.sample_id for c in g] for g in groups]


def test_a_failing_process_raises_its_own_error_after_the_others_end(dataset):
    groups = conversation_groups(dataset[:4], jobs=2)
    with pytest.raises(ValueError, match="conv-30 is refused"):
        in_processes(_ids, groups=groups, kwargs={"fail": "conv-30"})
    with pytest.raises(RuntimeError, match="ended with exit code 3 before reporting"):
        in_processes(_ids, groups=groups, kwargs={"exit_code": 3})


@pytest.mark.integration  # mempalace's own environment
def test_mempalace_in_two_processes_makes_the_records_of_one(tmp_path, dataset_path, capsys):
    require_toolchain()
    args = ["leaderboard", "--systems", "mempalace", "--sample", "conv-26,conv-30", "--sessions", "1"]
    with offline_outputs(tmp_path / "one") as one:
        assert main([*args, "--jobs", "1"]) == 0
    assert "processes" not in capsys.readouterr().out
    with offline_outputs(tmp_path / "two") as two:
        assert main([*args, "--jobs", "2"]) == 0
    printed = capsys.readouterr().out
    assert "ingesting 2 conversations in 2 processes" in printed
    assert "answering 2 conversations' questions in 2 processes" in printed
    # each process appends its conversations' lines: compared sorted, and without the ids MemPalace draws at random
    first, second = (results(o, memory_ids=False, in_order=False) for o in (one, two))
    assert len(first) == 4 and len(first["rows"]) == 1  # the ingestion; the run's answers and scores; the table
    for name in first:
        assert first[name] == second[name], name


def _wait(group, *, folder: str) -> None:
    """Note this process's pid, then wait to be stopped."""
    (Path(folder) / f"{group[0].sample_id}.pid").write_text(str(os.getpid()))
    time.sleep(120)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()


def test_ctrl_c_stops_every_process_and_raises(tmp_path, dataset_path):
    script = ("import sys; sys.path[:0] = [sys.argv[1]]\n"
              "from locomo_kit.dataset import load_dataset\n"
              "from locomo_kit.pipeline.conversation_jobs import conversation_groups, in_processes\n"
              "from test_conversation_jobs import _wait\n"
              "groups = conversation_groups(load_dataset(sys.argv[2])[:4], jobs=2)\n"
              "in_processes(_wait, groups=groups, kwargs={'folder': sys.argv[3]})\n")
    proc = subprocess.Popen([sys.executable, "-c", script, str(Path(__file__).parent), str(dataset_path),
                             str(tmp_path)], stderr=subprocess.PIPE, text=True, preexec_fn=interruptible)
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("*.pid"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    pids = [int(p.read_text()) for p in tmp_path.glob("*.pid")]
    assert len(pids) == 2
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=150)  # each process has 30 s to stop after its SIGINT; a loaded machine
    assert proc.returncode != 0 and "KeyboardInterrupt" in err
    assert not [p for p in pids if _alive(p)]
