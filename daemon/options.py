"""initializationOptions: every field defaulted; bad values are reported and
replaced by their default, never fatal (the daemon keeps serving)."""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field, fields, replace
from typing import Any

from ctxls.index.discovery import IgnoreRules
from ctxls.index.languages import DEFAULT_INCLUDE
from ctxls.index.engine import READY_WAIT_S
from ctxls.index.live import WATCH_MODES
from ctxls.index.memory import DEFAULT_EPISODE_WINDOW_DAYS
from ctxls.index.scopes import GLOBAL, RESERVED_PREFIX
from ctxls.index.vocabulary import MAX_SCOPE_CHARS

DEFAULT_DEBOUNCE_MS = 150
MEMORY_URL_ENV = "CTXLS_MEMORY_URL"
# The embedding model of a process no editor configures (`ctxls mcp`, `serve
# --root`, a CLI verb without a daemon): an option sent by a client wins.
EMBED_MODEL_ENV = "CTXLS_EMBED_MODEL"
EMBED_TOKENIZER_ENV = "CTXLS_EMBED_TOKENIZER"
MEMORY_URL_SCHEMES = ("postgresql://", "postgres://")
# The initializationOptions (a JSON object) of the editor whose proxy started
# this daemon in a takeover (daemon/proxy.py): its index options are this
# daemon's. In the environment, not on the command line: memoryUrl may hold a
# password, and any user can read a process's arguments.
TAKEOVER_OPTIONS_ENV = "CTXLS_TAKEOVER_OPTIONS"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class InitOptions:
    dbPath: str | None = None
    embeddings: bool = True
    include: tuple[str, ...] = DEFAULT_INCLUDE
    exclude: tuple[str, ...] = ()
    owner: str | None = None
    session: str | None = None
    strictScope: bool = False
    # Episodes older than this are pruned on each episode write.
    episodeWindowDays: float = DEFAULT_EPISODE_WINDOW_DAYS
    debounceMs: int = DEFAULT_DEBOUNCE_MS
    # Listen on <store dir>/daemon.sock so CLI and MCP clients share this daemon.
    socket: bool = True
    # Another ONNX sentence-embedding model (both paths, or neither), or a
    # built-in model's name alone: "all-MiniLM-L6-v2" (the general model the
    # default code model was tuned from), "ctxls-code-static-256" (the opt-in
    # static model, embeddings.STATIC_MODEL_NAME), "multilingual-e5-small" (the
    # opt-in e5 tier, embeddings.E5_MODEL_NAME).
    # Default: $CTXLS_EMBED_MODEL and $CTXLS_EMBED_TOKENIZER.
    embedModel: str | None = field(default_factory=lambda: os.environ.get(EMBED_MODEL_ENV) or None)
    embedTokenizer: str | None = field(default_factory=lambda: os.environ.get(EMBED_TOKENIZER_ENV) or None)
    # Team memory in PostgreSQL (postgresql://...); default: $CTXLS_MEMORY_URL, else
    # memory stays in the first folder's SQLite store.
    memoryUrl: str | None = field(default_factory=lambda: os.environ.get(MEMORY_URL_ENV) or None)
    # Following the files on disk (index/live.py): "auto" (native events, else
    # polling), "poll" (stat scans only: network file systems) or "off".
    watch: str = "auto"
    # A request before a folder's first index is complete waits this long, then
    # answers -32011 "index not ready" (a burst's pass: a partial answer).
    readyWaitMs: int = int(READY_WAIT_S * 1000)
    # Unknown keys, kept so the daemon can say once that it ignored them.
    ignored: tuple[str, ...] = field(default=(), compare=False)


# The options that shape a repository's index: one daemon serves every editor
# of the repository from one index (daemon/sessions.py), so these are the
# daemon's, whatever a proxied editor asks. The others (owner, session,
# strictScope, episodeWindowDays, debounceMs) apply per editor session.
# dbPath and socket are never shared: an editor giving them serves in process.
INDEX_OPTIONS = ("include", "exclude", "embeddings", "embedModel", "embedTokenizer", "memoryUrl",
                 "watch", "readyWaitMs")


def _check(name: str, value: Any) -> Any:
    """The value converted to the field's type, or raise ValueError."""
    if name == "owner" and isinstance(value, str) and value.startswith(RESERVED_PREFIX) \
            and value != GLOBAL:
        raise ValueError(f"must not start with {RESERVED_PREFIX!r} (only {GLOBAL!r} is reserved)")
    if name == "owner" and isinstance(value, str) and len(value) > MAX_SCOPE_CHARS:
        # The owner is the scope of every scopeless memory request: one no
        # scope may be would fail each of them with a param the client never sent.
        raise ValueError(f"must be at most {MAX_SCOPE_CHARS} characters (a scope's bound)")
    if name == "memoryUrl":
        if value is None or (isinstance(value, str) and value.startswith(MEMORY_URL_SCHEMES)):
            return value
        raise ValueError("must be a postgresql:// URL")
    if name in ("dbPath", "owner", "session", "embedModel", "embedTokenizer"):
        if value is None or (isinstance(value, str) and value):
            return value
        raise ValueError("must be a non-empty string")
    if name == "episodeWindowDays":
        if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 36_500:
            return float(value)
        raise ValueError("must be a number of days above 0 and at most 36500")
    if name in ("embeddings", "strictScope", "socket"):
        if isinstance(value, bool):
            return value
        raise ValueError("must be true or false")
    if name in ("include", "exclude"):
        if isinstance(value, list) and all(isinstance(v, str) and v for v in value):
            if name == "include":
                return tuple(v.lower().lstrip(".") for v in value)
            try:  # a glob git cannot read would fail the folder's engine, not just itself
                IgnoreRules(value)
            except Exception as exc:
                raise ValueError(f"holds a pattern git cannot read ({exc})") from None
            return tuple(value)
        raise ValueError("must be a list of non-empty strings")
    if name == "watch":
        if value in WATCH_MODES:
            return value
        raise ValueError(f"must be one of {', '.join(WATCH_MODES)}")
    if name == "readyWaitMs":
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 600_000:
            return value
        raise ValueError("must be an integer from 0 to 600000")
    if name == "debounceMs":
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 10_000:
            return value
        raise ValueError("must be an integer from 0 to 10000")
    raise KeyError(name)


def parse_init_options(raw: Any) -> tuple[InitOptions, list[str]]:
    """Options plus human-readable problems (each already defaulted)."""
    if raw is None:
        return InitOptions(), []
    if not isinstance(raw, dict):
        return InitOptions(), ["initializationOptions must be an object; using defaults"]
    known = {f.name for f in fields(InitOptions)} - {"ignored"}
    values: dict[str, Any] = {}
    problems: list[str] = []
    ignored = []
    for key, value in raw.items():
        if key not in known:
            ignored.append(key)
            continue
        try:
            values[key] = _check(key, value)
        except ValueError as exc:
            problems.append(f"initializationOptions.{key} {exc}; using the default")
    return InitOptions(**values, ignored=tuple(ignored)), problems


def with_takeover_options(options: InitOptions) -> InitOptions:
    """``options`` with the index options of the editor whose proxy started
    this process (TAKEOVER_OPTIONS_ENV), if one did: a takeover's daemon
    indexed with the defaults, so an editor's exclude or embeddings false
    stopped applying once its proxy took over."""
    raw = os.environ.get(TAKEOVER_OPTIONS_ENV)
    if not raw:
        return options
    try:
        sent = json.loads(raw)
    except ValueError:
        log.warning("$%s is not JSON; indexing with the defaults", TAKEOVER_OPTIONS_ENV)
        return options
    # Problems were reported to that editor by its own session's initialize.
    editors, _ = parse_init_options(sent)
    return replace(options, **{name: getattr(editors, name) for name in INDEX_OPTIONS})


def unapplied_index_options(mine: InitOptions, daemons: InitOptions) -> list[str]:
    """Each index option of ``mine`` the daemon does not apply, with the
    daemon's value: ``exclude ["vendor/**"] (it uses [])``."""
    return [f"{name} {_shown(name, asked)} (it uses {_shown(name, applied)})"
            for name in INDEX_OPTIONS
            if (asked := getattr(mine, name)) != (applied := getattr(daemons, name))]


def _shown(name: str, value: Any) -> str:
    if name == "memoryUrl":  # never shown: it may hold a password
        return "another database" if value else "none"
    if value is None:
        return "the default"
    return json.dumps(list(value) if isinstance(value, tuple) else value)
