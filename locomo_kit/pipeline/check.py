"""``locomo-kit systems check SYSTEM``: a memory system tried on the first sessions of one conversation, in a
store of its own, showing what was written, what it acknowledged and holds, what a count answers on an empty and
a filled store, and what a search by a stored turn's own words and by one LoCoMo question returns and how each
result was read; then each known mistake found, in one line with its fix.

It works the same for adapters, Workers and MCP profiles; for an MCP profile it also shows the rendered
arguments of the first writes and the raw result of each tool call (:attr:`MCPSystem.calls`).
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from locomo_kit.dataset import Conversation, questions
from locomo_kit.pipeline.stages import load
from locomo_kit.runs import RunFolder
from locomo_kit.settings import SystemSpec
from locomo_kit.systems.base import MemorySystem, MemorySystemError, declaration
from locomo_kit.systems.runner import ResolvedSystem, resolve_system

DIA_ID = re.compile(r"D\d+:\d+")
SHOWN_WRITES = 3  # the first writes whose rendered arguments are shown


@dataclass
class SystemCheck:
    """What ``systems check`` saw: ``lines`` to print, and ``mistakes`` (one line each, with its fix)."""

    system: str
    lines: list[str] = field(default_factory=list)
    mistakes: list[str] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.mistakes


def _short(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


def _raw(system: MemorySystem, since: int) -> list[dict[str, Any]]:
    calls = getattr(system, "calls", None)
    return list(calls[since:]) if isinstance(calls, list) else []


def _raw_lines(calls: list[dict[str, Any]]) -> list[str]:
    out = []
    for c in calls:
        r = c["result"]
        shown = r.get("error") or {k: v for k, v in r.items() if k in ("is_error", "text", "structured") and v}
        out.append(f"    raw {c['tool']}({_short(c['arguments'], 200)}) -> {_short(shown)}")
    return out


def _count(system: MemorySystem, *, check: SystemCheck, conv: Conversation, when: str) -> int | None:
    since = len(getattr(system, "calls", None) or [])
    try:
        held = system.held(conv.sample_id)
    except MemorySystemError as exc:
        check.lines.append(f"  count on {when} store: FAILED: {_short(str(exc), 400)}")
        check.lines += _raw_lines(_raw(system, since))
        check.mistakes.append(f"the count fails on {when} store ({_short(str(exc), 160)}): it must answer 0 when "
                              "nothing is held; in an MCP profile name that answer with [count] none_if = \"<a regex "
                              "of its text>\"")
        return None
    check.lines.append(f"  count on {when} store: {held}")
    check.lines += _raw_lines(_raw(system, since))
    return held


def _search(system: MemorySystem, *, check: SystemCheck, conv: Conversation, query: str, what: str,
            wanted: list[str], known: set[str]) -> None:
    since = len(getattr(system, "calls", None) or [])
    try:
        found = system.search(conv.sample_id, query, 5)
    except MemorySystemError as exc:
        check.lines.append(f"  search by {what}: FAILED: {_short(str(exc), 400)}")
        check.lines += _raw_lines(_raw(system, since))
        check.mistakes.append(f"the search by {what} fails: {_short(str(exc), 200)}")
        return
    raw = _raw(system, since)
    check.lines.append(f"  search by {what} ({_short(query, 90)!r}): {len(found.memories)} results")
    check.lines += _raw_lines(raw)
    for i, m in enumerate(found.memories, 1):
        placed = m.metadata.get("placed_by") or ("system" if m.source_turns else "none")
        check.lines.append(f"    {i}. text {_short(m.text, 90)!r}; id {m.id}; turn {','.join(m.source_turns) or '–'} "
                           f"(placed by {placed}); score {m.score}")
    turns = [t for m in found.memories for t in m.source_turns]
    foreign = sorted({t for t in turns if not DIA_ID.fullmatch(t) or t not in known})
    if foreign:
        check.mistakes.append(f"turn ids that are not LoCoMo's ({', '.join(foreign[:3])}): point [search] turn at the "
                              "field holding the dia_id you wrote (e.g. the key \"{dia_id}\"), or give turn_pattern "
                              "= \"(D\\\\d+:\\\\d+)\" to cut it out of that field")
    if raw and not found.memories:
        texts = "\n".join((c["result"].get("text") or [""])[0] for c in raw if not c["result"].get("error"))
        if texts.strip() and getattr(system, "profile", None) is not None and system.profile.search_results.kind == "text":
            check.mistakes.append(f"the [search] pattern matches nothing in the tool's answer ({_short(texts, 120)!r}): "
                                  "fix pattern so that each result is one match with (?P<text>...)")
    if what.startswith("a stored turn") and not (set(wanted) & set(turns)) \
            and not any(query[:60] in m.text for m in found.memories):
        check.mistakes.append(f"a stored turn ({wanted[0]}) is not found by its own words: the search does not "
                              "return what was written (another tool or argument, or the writes went elsewhere)")
    profile = getattr(system, "profile", None)
    rmap = profile.search_results if profile is not None else None
    if rmap is not None and rmap.kind == "text" and rmap.pattern and found.memories:
        groups = set(re.compile(rmap.pattern).groupindex)
        bound = {"id": any(m.id is not None for m in found.memories),
                 "turn": any(m.metadata.get("placed_by") == "system" for m in found.memories),
                 "score": any(m.metadata.get("server_score") is not None for m in found.memories)}
        unbound = sorted(g for g in bound if g in groups and not bound[g])
        if unbound:
            check.mistakes.append(f"the [search] pattern's group(s) {', '.join(unbound)} matched nothing in any "
                                  "result: make each group match its part of the answer, or leave it out")


def _write_key_lines(system: MemorySystem, *, check: SystemCheck, held: int | None, acknowledged: int) -> None:
    profile = getattr(system, "profile", None)
    if held is None or system.transforms or held >= acknowledged:
        return
    cause = ""
    if profile is not None and profile.write_each == "turn" and "{dia_id}" not in json.dumps(profile.write.arguments):
        cause = (" No argument of [write] names {dia_id}: the server keeps one item per key or name, and every "
                 "write with the same one overwrites the one before.")
    check.mistakes.append(f"writes collide: it acknowledged {acknowledged} writes and holds {held}.{cause} Fix: make "
                          "each write's key unique (put {dia_id} in the key or name argument); the docs' repeated-key "
                          "trap (docs/mcp.md)")


def check_system(system: SystemSpec | ResolvedSystem | str, *, sample: str = "conv-26", sessions: int = 2,
                 dataset_path: str | None = None, log: Callable[[str], None] | None = None) -> SystemCheck:
    """Try ``system`` (a name, or a :class:`~locomo_kit.settings.SystemSpec` with its options or a Worker's URL and
    mode) on the first ``sessions`` sessions of ``sample`` in a store of its own (removed afterwards, the
    conversation forgotten first and last); see the module doc. ``log``: each line as it is made."""
    if sessions < 1:
        raise ValueError("--sessions must be at least 1")
    resolved = resolve_system(system)
    conv = load(f"{sample.split(',')[0].split('@')[0]}@s{sessions}", dataset_path=dataset_path)[0][0]
    check = SystemCheck(resolved.name)
    root = Path(tempfile.mkdtemp(prefix="locomo-check-"))
    try:
        folder = RunFolder("check", root=root)
        with resolved.open(folder) as opened:
            _run(opened, check=check, conv=conv)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    check.mistakes = list(dict.fromkeys(check.mistakes))
    if log:
        for line in check.lines + [f"MISTAKE: {m}" for m in check.mistakes]:
            log(line)
    return check


def _run(system: MemorySystem, *, check: SystemCheck, conv: Conversation) -> None:
    if hasattr(system, "calls"):
        system.calls = []
    ident = system.identity()
    check.lines.append(f"{check.system}: {ident.label} ({ident.url}); it {declaration(system)}; keeps turn ids: "
                       f"{'yes' if system.keeps_turn_ids else 'no (the kit places results by their text)'}")
    check.lines.append(f"on {conv.sample_id}, sessions 1-{len(conv.sessions)} "
                       f"({sum(len(s.turns) for s in conv.sessions)} turns), in a store of its own:")
    system.forget(conv.sample_id)
    _count(system, check=check, conv=conv, when="an empty")
    acknowledged = 0
    writes_since = len(getattr(system, "calls", None) or [])
    for session in conv.sessions:
        try:
            got = system.ingest_session(conv, session)
        except MemorySystemError as exc:
            check.lines.append(f"  session {session.number}: FAILED: {_short(str(exc), 400)}")
            check.mistakes.append(f"writing session {session.number} fails: {_short(str(exc), 200)}")
            break
        ack = got.stored if got.acknowledged is None else got.acknowledged
        acknowledged += ack
        check.lines.append(f"  session {session.number} ({len(session.turns)} turns): acknowledged {ack}"
                           + (f" ({got.note})" if got.note else ""))
    writes = [c for c in _raw(system, writes_since) if c["tool"] == getattr(getattr(system, "profile", None),
                                                                            "write", None).tool] \
        if getattr(system, "profile", None) is not None else []
    for c in writes[:SHOWN_WRITES]:
        check.lines.append(f"    write {c['tool']}({_short(c['arguments'], 240)}) -> "
                           f"{_short(c['result'].get('error') or c['result'].get('text'), 120)}")
    held = _count(system, check=check, conv=conv, when="the filled")
    check.figures.update(acknowledged=acknowledged, held=held)
    check.lines.append(f"  held {held if held is not None else '?'} of the {acknowledged} writes it acknowledged")
    _write_key_lines(system, check=check, held=held, acknowledged=acknowledged)
    known = {t.dia_id for s in conv.sessions for t in s.turns}
    turn = max(conv.sessions[0].turns, key=lambda t: len(t.text))
    _search(system, check=check, conv=conv, query=turn.text, what=f"a stored turn's own words ({turn.dia_id})",
            wanted=[turn.dia_id], known=known)
    asked = next((q for q in questions(conv) if q.category in (1, 2, 3, 4) and q.evidence
                  and set(q.evidence) <= known), None)
    if asked is not None:
        _search(system, check=check, conv=conv, query=asked.question,
                what=f"a LoCoMo question (evidence {', '.join(asked.evidence)})", wanted=list(asked.evidence),
                known=known)
    system.forget(conv.sample_id)
    if check.ok:
        check.lines.append("no known mistake found: run `locomo-kit run --sample conv-26 --system "
                           f"{check.system}` next (and the contract, docs/systems.md)")
