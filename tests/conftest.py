"""Shared fixtures: temporary repositories and a pytest-lsp client driving the
real ``ctxls serve`` process over stdio."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import pytest
from lsprotocol import types
from pygls.protocol import default_converter
from pygls.protocol.json_rpc import JsonRPCResponseMessage
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import register_lsp_features

# The user's store key (index/trust.py) lives outside the tests' home, one per
# test session; every `ctxls` process the tests start inherits it.
os.environ.setdefault("CTXLS_STATE_DIR", tempfile.mkdtemp(prefix="ctxls-state-"))

@pytest.fixture(autouse=True)
def _fresh_give_ups(monkeypatch):
    """Each test starts with no grammar suspended: the give-ups other tests'
    hostile files caused in this process (languages.GIVE_UPS_TO_SUSPEND)
    would otherwise suspend Kotlin or D for the tests after them."""
    import collections

    from ctxls.index import languages

    monkeypatch.setattr(languages, "_give_ups", collections.defaultdict(set))
    monkeypatch.setattr(languages, "_set_aside", collections.defaultdict(set))


SAMPLE_FILES = {
    "pkg/__init__.py": "",
    "pkg/session.py": (
        "import os\n"
        "\n"
        "\n"
        "class Session:\n"
        '    """An HTTP session that keeps cookies."""\n'
        "\n"
        "    timeout = 30\n"
        "\n"
        "    def request(self, method, url):\n"
        "        return send_prepared(method, url, self.timeout)\n"
        "\n"
        "    def close(self):\n"
        "        self.closed = True\n"
        "\n"
        "\n"
        "def send_prepared(method, url, timeout):\n"
        '    """Send a prepared request over the wire."""\n'
        "    return (method, url, timeout)\n"
    ),
    "pkg/retry.py": (
        "from pkg.session import Session\n"
        "\n"
        "\n"
        "def retry_upload(payload, attempts=3):\n"
        "    for _ in range(attempts):\n"
        "        if Session().request('PUT', payload):\n"
        "            return True\n"
        "    return False\n"
    ),
    "web/app.ts": (
        "export function renderWidget(name: string): string {\n"
        "  return `<div>${name}</div>`;\n"
        "}\n"
    ),
    "README.md": "# Sample\n\nA sample project.\n\n## Deploying\n\nRun the deploy script with FOO_URL set.\n",
}


def scored_chunk(chunk_id: int, path: str, score: float):
    """A code chunk of ``path`` for the ranking's plain functions: a lexical
    candidate whose BM25 is ``score``."""
    from ctxls.index.ranking import ScoredChunk
    from ctxls.index.recall_features import RecallFeatures

    return ScoredChunk(chunk_id=chunk_id, path=path, kind="code", language="python", symbol=None,
                       symbol_kind="function", start_line=10 * chunk_id, end_line=10 * chunk_id + 8,
                       score=score, text="", embed_hash="", features=RecallFeatures(bm25=score))


# A test's own git repository: a fixed identity, no signing, whatever the user's config.
GIT_IDENTITY = ("-c", "user.name=ctxls tests", "-c", "user.email=tests@example.com",
                "-c", "commit.gpgsign=false")


def git(repo: Path, *args: str) -> str:
    """``git args`` in ``repo``; its output, stripped (a failure raises)."""
    return subprocess.run(["git", "-C", str(repo), *GIT_IDENTITY, *args], check=True,
                          capture_output=True, text=True).stdout.strip()


def commit_files(repo: Path, message: str, files: dict[str, str]) -> str:
    """Write ``files`` in ``repo``, commit everything with ``message``; the new HEAD."""
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def write_tree(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


@pytest.fixture
def make_engine(tmp_path: Path):
    """Engines over trees of ``files``, cold-indexed (a git repository
    unless ``git=False``), closed after the test."""
    from ctxls.index.engine import Engine

    engines: list[Engine] = []

    def make(files: dict[str, str | bytes], git: bool = True) -> Engine:
        root = tmp_path / f"repo{len(engines)}"
        write_tree(root, files)
        if git:
            subprocess.run(["git", "init", "-q", str(root)], check=True)
        engine = Engine(root)
        engine.cold_index()
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        engine.close()


def callers(result) -> set[tuple[str, int, str | None, bool]]:
    """An impact answer's callers as (path, line, enclosing symbol, confirmed)."""
    return {(c.path, c.span.start_line, c.symbol, c.confirmed) for c in result.callers}


# What VS Code and Neovim must both show for `send_prepared` (pkg/session.py:16)
# of SAMPLE_FILES: the server's words (its lens title and impact `summary`), so
# the two editors say the same (tests/test_vscode_e2e.py, tests/test_nvim_plugin.py).
SEND_PREPARED_LENS = "1 caller · risk med"
SEND_PREPARED_SUMMARY = "1 caller · 0 mentions"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A small git repository with Python, TypeScript and Markdown files."""
    root = tmp_path / "repo"
    root.mkdir()
    write_tree(root, SAMPLE_FILES)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def alter_model_file(monkeypatch, tmp_path: Path, attribute: str) -> None:
    """Point ``embeddings.<attribute>`` (a shipped model file) at a copy with
    one byte flipped: its sha256 no longer matches."""
    from ctxls.index import embeddings

    shipped = getattr(embeddings, attribute)
    data = bytearray(shipped.read_bytes())
    data[len(data) // 2] ^= 0xFF
    altered = tmp_path / shipped.name
    altered.write_bytes(bytes(data))
    monkeypatch.setattr(embeddings, attribute, altered)


def to_plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_plain(v) for v in value]
    return value


def _raw_result_converter():
    """Keep custom requests' results as plain dicts (pygls makes namedtuples)."""
    converter = default_converter()
    default_hook = converter.get_structure_hook(JsonRPCResponseMessage)

    def structure(obj: Any, cls: type) -> Any:
        if cls is JsonRPCResponseMessage:
            return cls(**obj)
        return default_hook(obj, cls)

    converter.register_structure_hook(JsonRPCResponseMessage, structure)
    return converter


class Session:
    """A running server plus helpers for the custom requests."""

    def __init__(self, client: LanguageClient, root: Path):
        self.client = client
        self.root = root
        self.registrations: list[types.Registration] = []

    async def request(self, method: str, params: dict | None = None) -> Any:
        return to_plain(await self.client.protocol.send_request_async(method, params or {}))

    async def wait_indexed(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for reports in self.client.progress_reports.values():
                if any(isinstance(r, types.WorkDoneProgressEnd) for r in reports):
                    return
            await asyncio.sleep(0.05)
        raise AssertionError("no work-done progress end within the timeout")

    async def wait_for(self, predicate, timeout: float = 5.0, interval: float = 0.05):
        """Poll an async predicate until it returns something truthy."""
        deadline = time.monotonic() + timeout
        while True:
            value = await predicate()
            if value or time.monotonic() > deadline:
                return value
            await asyncio.sleep(interval)

    def uri(self, rel: str) -> str:
        return (self.root / rel).resolve().as_uri()

    def open(self, rel: str, text: str | None = None, version: int = 1) -> None:
        if text is None:
            text = (self.root / rel).read_text(encoding="utf-8")
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=self.uri(rel), language_id="python", version=version,
                                   text=text)))

    def replace(self, rel: str, text: str, version: int) -> None:
        """A full-text didChange (not saved)."""
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=self.uri(rel), version=version),
            [types.TextDocumentContentChangeWholeDocument(text=text)]))

    def close(self, rel: str) -> None:
        self.client.text_document_did_close(types.DidCloseTextDocumentParams(
            types.TextDocumentIdentifier(uri=self.uri(rel))))


@asynccontextmanager
async def serve(root: Path, options: dict | None = None,
                capabilities: str = "visual-studio-code",
                args: tuple[str, ...] = (), more_folders: tuple[Path, ...] = ()
                ) -> AsyncIterator[Session]:
    """An LSP session on ``root`` (and ``more_folders``, a multi-root workspace)."""
    client = LanguageClient(converter_factory=_raw_result_converter)
    register_lsp_features(client)
    session = Session(client, root)

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def on_register(_client: LanguageClient, params: types.RegistrationParams) -> None:
        session.registrations.extend(params.registrations)

    await client.start_io(sys.executable, "-m", "ctxls.daemon.cli", "serve", *args)
    # Embeddings off unless a test asks: BM25 order is deterministic, while
    # hybrid order depends on how far the background embedding has got.
    opts = {"debounceMs": 50, "embeddings": False} | (options or {})
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities(capabilities),
        root_uri=root.resolve().as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=folder.resolve().as_uri(), name=folder.name)
                           for folder in (root, *more_folders)],
        initialization_options=opts))
    try:
        yield session
    finally:
        await client.shutdown_session()
        await client.stop()


# -- the memory backends: every memory test runs on SQLite and on PostgreSQL ---------

@pytest.fixture
def stdio_daemon(repo: Path):
    """A real daemon on stdio over ``repo`` (serving its socket too), indexed."""
    from rawrpc import StdioDaemon

    daemon = StdioDaemon(repo, {"socket": True})
    daemon.wait_indexed()
    yield daemon
    daemon.close()


@pytest.fixture(scope="session")
def pg_server():
    """One PostgreSQL for the whole session (tests/pg_server.py)."""
    from pg_server import PgServer, server_folder

    with server_folder() as folder:
        server = PgServer(folder)
        server.start()
        try:
            server.prepare()
            yield server
        finally:
            server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def memory_options(request) -> dict:
    """initializationOptions selecting the memory backend: none (the folder's
    SQLite store), or memoryUrl naming a fresh database of the session's server."""
    if request.param == "sqlite":
        return {}
    return {"memoryUrl": request.getfixturevalue("pg_server").fresh_database()}
