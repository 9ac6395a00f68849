"""The machinery behind the MemPalace and Mem0 adapters, with a real venv and real host processes:
a system's cached environment (built once, under a lock, in its final folder, rebuilt when its recipe
changes) and the JSON-lines host (errors name the system; a dead or silent host is reported, never waited
on for ever)."""

from __future__ import annotations

import json
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from locomo_kit.systems.base import MemorySystemError, SystemUnavailable
from locomo_kit.systems.environments import (
    EnvironmentBuildError,
    EnvironmentSpec,
    ensure_environment,
    env_dir,
    env_python,
    is_built,
)
from locomo_kit.systems.host_process import HOSTS_DIR, SystemHost, SystemHostError
from locomo_kit.systems.peer_host import call


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("LOCOMO_SYSTEMS_CACHE", str(tmp_path / "systems"))
    return tmp_path / "systems"


def counting_spec(builds: list, finish_id: str = "v1", fail: bool = False) -> EnvironmentSpec:
    def finish(env: Path) -> None:
        builds.append(env)
        if fail:
            raise EnvironmentBuildError("injected failure in the finishing step")
        (env / "extra.txt").write_text(finish_id)

    return EnvironmentSpec("toy", "1.0", steps=(), finish=finish, finish_id=finish_id)


def test_environment_built_once_in_place_and_reused(cache):
    builds: list = []
    spec = counting_spec(builds)
    threads = [threading.Thread(target=ensure_environment, args=(spec,)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    final = env_dir(spec)
    assert len(builds) == 1, "concurrent first uses built the environment more than once"
    assert builds[0] == final  # built in its final folder: its scripts' shebangs name a folder that stays
    assert is_built(spec) and (final / "extra.txt").read_text() == "v1"
    marker = json.loads((final / ".complete").read_text())
    assert marker["recipe"]["system"] == "toy" and marker["built_in_s"] >= 0
    assert ensure_environment(spec) == final and len(builds) == 1
    assert [p.name for p in cache.iterdir() if p.name.startswith(".toy")] == []  # no temporary folder left
    out = __import__("subprocess").run([str(env_python(final)), "-c", "import sys; print(sys.prefix)"],
                                       capture_output=True, text=True, check=True)
    assert Path(out.stdout.strip()) == final / "venv"


def test_environment_rebuilt_when_its_recipe_changes(cache):
    builds: list = []
    ensure_environment(counting_spec(builds, "v1"))
    changed = counting_spec(builds, "v2")
    assert not is_built(changed)
    final = ensure_environment(changed)
    assert len(builds) == 2 and (final / "extra.txt").read_text() == "v2"


def test_failed_build_leaves_nothing_and_says_why(cache):
    builds: list = []
    spec = counting_spec(builds, fail=True)
    with pytest.raises(EnvironmentBuildError, match="injected failure"):
        ensure_environment(spec)
    assert not env_dir(spec).exists()
    assert [p for p in cache.iterdir() if not p.name.endswith(".lock")] == []


def test_pip_failure_names_the_system_and_the_command(cache):
    spec = EnvironmentSpec("toy", "2.0", steps=(("--no-index", "no-such-package-locomo==9.9"),))
    with pytest.raises(EnvironmentBuildError, match=r"building the toy environment: .*no-such-package-locomo"):
        ensure_environment(spec)


def host_script(tmp_path: Path, body: str) -> str:
    """A host in the kit's own Python that uses the real host loop (an absolute path: HOSTS_DIR / it)."""
    path = tmp_path / "toy_host.py"
    path.write_text(f"import sys; sys.path.insert(0, {str(HOSTS_DIR)!r})\nfrom hostloop import serve\n"
                    + textwrap.dedent(body))
    return str(path)


OPS = """
import os, sys, time
def open_system(settings):
    if settings.get("refuse"):
        raise RuntimeError("no palace here")
    def echo(x): print("library chatter on stdout"); return {"x": x}
    def boom(): raise ValueError("bad query")
    def die(): sys.stderr.write("segfault-like exit\\n"); sys.stderr.flush(); os._exit(3)
    def hang(): time.sleep(60)
    return {"versions": {"toy": "1"}}, {"echo": echo, "boom": boom, "die": die, "hang": hang}
serve(open_system)
"""


def test_host_answers_and_keeps_library_output_out_of_the_protocol(tmp_path):
    with SystemHost("toy", Path(sys.executable), host_script(tmp_path, OPS), {}) as host:
        assert host.info == {"versions": {"toy": "1"}}
        assert host.call("echo", x=[1, "é"]) == {"x": [1, "é"]}
        assert "library chatter" in host.stderr_tail()


def test_host_error_names_the_system_and_the_failure(tmp_path):
    with SystemHost("toy", Path(sys.executable), host_script(tmp_path, OPS), {}) as host:
        with pytest.raises(SystemHostError, match=r"^toy: boom failed inside the system: ValueError: bad query"):
            host.call("boom")
        with pytest.raises(SystemHostError, match="unknown operation 'nope'"):
            host.call("nope")
        assert host.call("echo", x=1) == {"x": 1}  # the host goes on after an error
        with pytest.raises(MemorySystemError, match="toy: boom failed") as info:
            call(host, "toy", "boom")
        assert not isinstance(info.value, SystemUnavailable)


def test_host_that_dies_is_reported_with_its_exit_status_and_stderr(tmp_path):
    with SystemHost("toy", Path(sys.executable), host_script(tmp_path, OPS), {}) as host:
        with pytest.raises(SystemUnavailable, match=r"toy: its host died while running die \(exit status 3\)"
                                                    r"(.|\n)*segfault-like exit"):
            call(host, "toy", "die")
        with pytest.raises(SystemHostError, match="died"):
            host.call("echo", x=1)


def test_silent_host_is_stopped_after_the_timeout(tmp_path):
    host = SystemHost("toy", Path(sys.executable), host_script(tmp_path, OPS), {}, call_timeout=1.5)
    try:
        with pytest.raises(SystemHostError, match="toy: its host gave no answer within 2 s while running hang"):
            host.call("hang")
        assert not host.alive()
    finally:
        host.close()


def test_host_that_cannot_open_its_system(tmp_path):
    with pytest.raises(SystemHostError, match="toy: its host could not open the system: RuntimeError: no palace"):
        SystemHost("toy", Path(sys.executable), host_script(tmp_path, OPS), {"refuse": True})


def test_host_that_crashes_before_it_is_ready(tmp_path):
    script = host_script(tmp_path, "raise SystemExit('missing native library')\n")
    with pytest.raises(SystemHostError, match=r"toy: its host died while starting \(exit status 1\)"
                                              r"(.|\n)*missing native library"):
        SystemHost("toy", Path(sys.executable), script, {})
