"""The interface every memory system the kit evaluates implements, and the types it speaks.

How a new adapter is registered
-------------------------------
1. Write one module, e.g. ``locomo_kit/systems/mysystem.py``, with a subclass of
   :class:`MemorySystem` (class attribute ``name = "mysystem"``). Import the system's own package
   inside the methods (or in ``open``), never at module top level: the registry imports the module
   only when the system is asked for, and the core install must not need the package.
2. Outside the kit: declare it as an entry point of the group ``locomo_kit.systems`` in your package (or
   name it ``--system package.module:Class``; docs/systems.md). Inside the kit: add one line to
   :data:`locomo_kit.systems.registry.SYSTEMS` (or call :func:`locomo_kit.systems.registry.register`)::

       SystemSpec("mysystem", "locomo_kit.systems.mysystem", "MySystem",
                  requires=("mypkg",), pip="pip install 'mypkg==1.2.3'")

   ``requires`` are import names checked before the module is imported; when one is missing the
   user is told the exact ``pip`` command. A system that builds and caches its own environment
   (and runs as a subprocess) leaves ``requires`` empty and builds it in :meth:`MemorySystem.open`.
3. Make ``tests/test_system_<name>.py`` subclass :class:`locomo_kit.testing.system_contract.SystemContract`
   with a ``system`` fixture; every adapter must pass that contract.

What an adapter must do
-----------------------
The kit drives everything else: it records one line per session in the ingestion folder's
``ingest.jsonl`` (so ingestion resumes after a crash), skips sessions already recorded, cuts
results to a context budget when the system has none of its own, builds the answerer's context,
scores, and reports. An adapter only talks to its system:

- ``__init__(store, **options)``: ``store`` is a folder the adapter owns (inside the kit's
  ingestion folder; it may not exist yet). Persist whatever the system stores there (a SQLite
  file, ``.npy``, a Chroma folder...), so that a later process (``locomo-kit answer``) finds it.
  ``options`` are the user's settings; unknown ones raise ``ValueError``. Do no work here.
- ``open()`` / ``close()``: start and stop what the system needs (a subprocess, a server, a
  loaded index). Everything is called between them; the kit uses the system as a context manager.
- Nothing may assume the system lives in this process: arguments and results are plain data
  (the dataclasses below hold only str / int / float / list / dict), so an adapter may forward
  every call to a subprocess or over HTTP.

Every call may raise :class:`MemorySystemError` (a failed call: recorded for that session or question,
the run goes on) or :class:`SystemUnavailable` (the system is gone: ingestion stops, resumable).

What only some systems do (a compressor whose fidelity the kit measures, a queue to wait for,
read-your-writes) is a capability: a method below with the default of a synchronous store, which such a
system overrides (the claude-mem Workers, :mod:`locomo_kit.systems.workers`, go through this interface).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from locomo_kit.dataset import Conversation, Session
from locomo_kit.worker.identity import identity_changes


class MemorySystemError(RuntimeError):
    """A call to a memory system failed (recorded against the session or question)."""


class SystemUnavailable(MemorySystemError):
    """The memory system cannot be reached or has stopped: nothing more can be done with it now."""


class MissingDependency(MemorySystemError):
    """A system's package is not installed; ``pip_command`` is the exact command that installs it."""

    def __init__(self, message: str, pip_command: str | None = None) -> None:
        super().__init__(message)
        self.pip_command = pip_command


@dataclass(frozen=True)
class SystemOption:
    """A setting a system takes from its user: ``--system-option NAME=VALUE`` on the command line,
    ``system_options={"NAME": value}`` in the library and the notebooks. ``type`` is str, int, float or
    bool; ``default`` is what the system uses when the option is not given; ``env``: an environment
    variable the system reads instead when the option is not given (older setups)."""

    name: str
    type: type = str
    default: Any = None
    help: str = ""
    env: str | None = None

    def parse(self, text: str) -> Any:
        """``text`` (from the command line) as this option's type; a clear ValueError otherwise."""
        if self.type is bool:
            if text.lower() in ("1", "true", "yes", "on"):
                return True
            if text.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(f"option {self.name} is true or false, not {text!r}")
        try:
            return self.type(text)
        except ValueError:
            raise ValueError(f"option {self.name} is {self.type.__name__}, not {text!r}") from None

    def describe(self) -> str:
        """``k1 (float, default 1.5): BM25's term saturation``, and the environment variable read instead."""
        env = f" (else ${self.env})" if self.env else ""
        return f"{self.name} ({self.type.__name__}, default {self.default!r}){env}: {self.help}"


@dataclass(frozen=True)
class Identity:
    """What produced a result: the system's name, its version, and every setting that changes what
    it stores or finds (not where it runs: ports, paths and tokens stay out of ``settings``).

    ``url``: where it answered (``"in-process"``, ``"subprocess"``, ``"embedded"`` or an http URL).
    """

    name: str
    version: str | None
    settings: dict[str, Any] = field(default_factory=dict)
    url: str = "in-process"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def label(self) -> str:
        """``bm25 0.3.16`` (what tables, figures and report headers name)."""
        return f"{self.name} {self.version}" if self.version else self.name


@dataclass
class Health:
    """``ok``: the system can ingest and search now. ``detail``: one line a user can act on when not.
    ``capabilities``: what it reports it can or cannot do (e.g. ``{"semantic_search": "available"}``)."""

    ok: bool
    detail: str = ""
    capabilities: dict[str, Any] = field(default_factory=dict)


@dataclass
class Memory:
    """One search result.

    ``text``: what an answerer is shown. ``source_turns``: the exact LoCoMo ``dia_id`` s
    (``"D1:3"``) the memory came from, when the system keeps them (else ``[]``: the kit then
    matches turns by text overlap). ``score``: the system's own score (higher is better; None when
    it gives none). ``session``/``date``: the source session number and its date, when known.
    """

    text: str
    source_turns: list[str] = field(default_factory=list)
    score: float | None = None
    id: str | None = None
    session: int | None = None
    date: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    raw: Any = field(default=None, repr=False, compare=False)  # in-process only: a Worker's own Observation


@dataclass
class SearchResult:
    """``memories`` best first. ``budget_applied``: True when the system itself packed its results
    to the ``context_budget`` it was given (otherwise the kit cuts them, best first).
    ``latency_ms``: the time the system took to answer (as seen by the caller)."""

    memories: list[Memory]
    latency_ms: float
    budget_applied: bool = False
    queries: list[str] = field(default_factory=list)


@dataclass
class SessionIngest:
    """What one session added: ``stored`` memories (0 means the system stored nothing for it, which
    the kit records as a failed session), and an optional note for the record. ``texts``: for a system
    that ``compresses`` sessions, the text of the memories this session produced (the kit measures which
    turns survive in them). ``acknowledged``: the writes the system acknowledged for this session, when
    ``stored`` says something else (a count of the whole conversation after a session write); None: ``stored``.

    After the last session the kit compares what the system holds (:meth:`MemorySystem.held`) with the sum
    of what it acknowledged: a system that stores what it is given (no ``transforms``) and holds fewer has
    lost writes, and its run is not a result."""

    stored: int
    note: str | None = None
    texts: list[str] | None = None
    acknowledged: int | None = None  # writes the system acknowledged for this session, where not ``stored``


def declaration(system: "MemorySystem") -> str:
    """What ``system`` declares it does with what it is given, as manifests and reports say it."""
    return f"transforms what it is given ({system.transforms})" if system.transforms else "stores what it is given"


class MemorySystem(ABC):
    """A memory system under evaluation. See the module docstring for the contract.

    Class attributes an adapter sets:

    - ``name``: the registry name (``"bm25"``).
    - ``keeps_turn_ids``: True when every :class:`Memory` it returns carries exact
      ``source_turns`` (the contract tests then check them).
    - ``own_budget``: True when :meth:`search` honours ``context_budget`` itself.
    - ``unit``: what it is given per session (``"turns"``: each turn on its own; ``"transcript"``:
      one session transcript). Named in the run id and the report.
    - ``system_options``: the :class:`SystemOption` s it takes (``locomo-kit systems`` lists them);
      anything else given raises ``ValueError`` before any work.
    - ``stored_noun``: what the console calls what it stores per session (``"turns"``, ``"observations"``;
      default ``"memories"``).
    - ``keyword_fusion``: False when the kit's keyword fusion (``--query-strategy keywords``: one
      search per content word, fused by reciprocal rank) is meaningless for it; such a run is refused
      before anything is ingested.
    - ``conversations_apart``: True when each conversation has a store of its own, which one process may open
      while another process works on another conversation (and :meth:`open` works again after
      :meth:`close`): the kit then ingests and answers (with the extractive answerer) groups of
      conversations in processes of their own when asked (``leaderboard --jobs``).
    """

    name: ClassVar[str] = ""
    keeps_turn_ids: ClassVar[bool] = False
    own_budget: ClassVar[bool] = False
    unit: ClassVar[str] = "turns"
    system_options: ClassVar[tuple[SystemOption, ...]] = ()
    keyword_fusion: ClassVar[bool] = True
    stored_noun: ClassVar[str] = "memories"
    conversations_apart: ClassVar[bool] = False
    # Capabilities only some systems have (the claude-mem Workers: see locomo_kit.systems.workers). The
    # defaults are those of a system that stores synchronously, as it is given, in its own store.
    compresses: bool = False  # it rewrites what it is given (a compressor): the kit measures what survives
    # what it declares it does with what it is given: None, the default, "stores what it is given" (then it must
    # hold every write it acknowledged); else how it transforms it ("a compressor: ...", "an LLM extraction: ...")
    transforms: str | None = None
    read_your_writes: ClassVar[bool] = False  # a memory may not be searchable at once: the kit waits after ingesting
    worker_records: ClassVar[bool] = False  # records in a Worker's shape: no "system" entry, the identity under "worker"

    def __init__(self, store: Path, **options: Any) -> None:
        self.store = Path(store)
        self.options = options

    @classmethod
    def description(cls) -> str | None:
        """What it is, in one line, where its registration's description is not specific enough (a family
        member such as ``mcp:NAME``); None otherwise."""
        return None

    @classmethod
    def readiness(cls) -> str:
        """Whether it can run now without building anything, in a few words (``locomo-kit systems``)."""
        return "ready"

    @classmethod
    def declared_version(cls) -> str | None:
        """The version, when known without starting anything (it then names the run id); else None."""
        return None

    @classmethod
    def run_tag(cls) -> str | None:
        """How run ids and ingestion folders name the system when name and version are not enough (an
        MCP profile adds its hash); None: ``<name>-<declared version>``."""
        return None

    def open(self) -> None:
        """Start what the system needs; called once before any other call."""

    def close(self) -> None:
        """Stop it and release files; called once at the end (also after an error)."""

    def __enter__(self) -> "MemorySystem":
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @abstractmethod
    def identity(self) -> Identity:
        """Name, version and result-changing settings (callable after :meth:`open`)."""

    @abstractmethod
    def health(self) -> Health:
        """Whether the system can ingest and search now."""

    @abstractmethod
    def ingest_session(self, conversation: Conversation, session: Session) -> SessionIngest:
        """Store one session of ``conversation`` (``conversation.sample_id`` keeps conversations
        apart: a search of one never returns another's memories). Must be idempotent: sending a
        session again (a resume after a crash) must not store its memories twice."""

    @abstractmethod
    def held(self, conversation_id: str) -> int:
        """How many memories the system holds for the conversation (0 when none)."""

    @abstractmethod
    def forget(self, conversation_id: str) -> int:
        """Delete everything held for the conversation; returns how many memories were deleted.
        Afterwards :meth:`held` is 0 and :meth:`search` finds nothing for it."""

    @abstractmethod
    def search(self, conversation_id: str, query: str, top_k: int,
               context_budget: int | None = None) -> SearchResult:
        """At most ``top_k`` memories of the conversation for ``query``, best first. With
        ``context_budget`` (tokens, characters / 4), a system with ``own_budget`` packs its results to
        that budget and sets ``budget_applied``; any other system ignores it (the kit cuts)."""

    # -- capabilities (see the class attributes above); each default fits a synchronous store ---------------
    def store_name(self, conversation_id: str) -> str:
        """Where the system keeps the conversation, as records name it (a Worker's project)."""
        return conversation_id

    def address(self) -> str:
        """Where it answered, as each session's record says it."""
        return self.identity().url

    def identity_record(self) -> dict[str, Any]:
        """The identity as the manifest's ``worker`` / ``system`` entry (the report reads name, version, url)."""
        ident = self.identity().as_dict()
        ident["semantic_search"] = self.health().capabilities.get("semantic_search")
        return ident

    def run_parameters(self) -> dict[str, Any]:
        """The manifest's ``parameters`` that say which system ran, and how."""
        return {"mode": self.unit, "system": self.name, "worker_url": None}

    def formation_changes(self, recorded: dict[str, Any]) -> list[str]:
        """How this system would form other memories than the one recorded at ingestion (``recorded``:
        its :meth:`identity_record` then): any change means the recorded memories are not reused."""
        return [c for c in identity_changes(recorded, self.identity().as_dict()) if not c.startswith("url ")]

    def prepare_ingest(self) -> None:
        """Check that ingestion can work now (before anything is sent); raise with what to do if not."""

    def begin_conversation(self, conversation_id: str, generation: str) -> None:
        """Called before the first session of a conversation that the kit sends in one ingestion;
        ``generation`` changes each time the conversation is forgotten and ingested again."""

    def failure_text(self, exc: MemorySystemError) -> str:
        """A failed call as its session's record says it."""
        return f"{type(exc).__name__}: {exc}"

    def nothing_stored_text(self) -> str:
        """The record's error for a session the system stored nothing of."""
        return f"{self.name} stored ZERO memories for this session"

    def settle(self, conversation_ids: list[str]) -> str | None:
        """After the last session sent: wait for work still in progress; a note when it did not finish."""
        return None

    def stored_texts(self, conversation_id: str) -> list[str]:
        """The text of every memory held for the conversation (measured by the kit when it ``compresses``)."""
        raise MemorySystemError(f"{self.name} does not list its memories")

    def wait_until_consistent(self, conversation_ids: list[str], timeout: float,
                              progress: bool | None = None) -> dict[str, Any]:
        """After ingestion: wait until a search finds what was stored (read-your-writes, for a system that
        declares it; called only once every session went in); the record of it."""
        return {"waited": False, "why": f"{self.name} stores synchronously: a memory is searchable once its "
                "session's ingest call returns"}
