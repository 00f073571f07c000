"""Client paths (issue 6): CLI recall through the daemon's socket vs. opening
the store cold, both as whole processes, and the MCP recall round trip.

Corpus: flask 3.1.0 (bench/corpora.py). A headless daemon
(`ctxls serve --root … --socket`) serves it; the bench waits until its
embedding backlog is empty so background work does not skew the numbers.

Run: .venv/bin/python bench/clients.py [--runs 100]

The subfolder row runs the CLI from ``src/flask`` without ``--root``: it must
find the repository (nearest ``.ctxls/`` or ``.git``) and its daemon.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpora import corpus_path  # noqa: E402

from ctxls.daemon.client import DaemonClient, default_socket  # noqa: E402

# The installed command, as people run it: `python -m` would put the working
# directory first on sys.path, and flask's src/flask/typing.py would shadow typing.
CTXLS = [str(Path(sys.executable).with_name("ctxls"))]
QUERY = "register a blueprint on the application"


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def time_cli(root: Path, runs: int, extra: list[str], cwd: Path | None = None) -> list[float]:
    """``cwd``: run from there without --root (the CLI finds the repository)."""
    where = [] if cwd is not None else ["--root", str(root)]
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        out = subprocess.run([*CTXLS, "recall", QUERY, *where, "--kind", "code",
                              "--json", *extra], capture_output=True, text=True, check=True,
                             cwd=cwd)
        times.append((time.perf_counter() - started) * 1000)
        assert json.loads(out.stdout)["hits"], out.stderr
    return times


async def time_mcp(root: Path, runs: int) -> list[float]:
    from mcp import StdioServerParameters
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "ctxls.daemon.cli", "mcp", "--root", str(root)],
                                   env={**os.environ, "CTXLS_LOG": "ERROR"})
    times = []
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for _ in range(runs):
                started = time.perf_counter()
                result = await session.call_tool("recall", {"query": QUERY, "kind": "code"})
                times.append((time.perf_counter() - started) * 1000)
                assert not result.is_error
    return times


def wait_for_daemon(root: Path, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        client = DaemonClient.connect(default_socket(root))
        if client is not None:
            status = client.request("ctxls/status", {})
            client.close()
            if status["ready"]:
                return
        time.sleep(1)
    raise TimeoutError("daemon did not finish indexing and embedding")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    args = parser.parse_args()
    root = corpus_path("flask")
    # Build the store once, outside the timing (read verbs never create one).
    subprocess.run([*CTXLS, "index", "--root", str(root)], check=True, capture_output=True)
    cold = time_cli(root, args.runs, ["--no-daemon", "--no-refresh"])
    cold_refresh = time_cli(root, args.runs, ["--no-daemon"])
    daemon = subprocess.Popen([*CTXLS, "serve", "--root", str(root), "--socket"],
                              stderr=subprocess.DEVNULL)
    try:
        wait_for_daemon(root)
        via_socket = time_cli(root, args.runs, [])
        from_subfolder = time_cli(root, args.runs, [], cwd=root / "src" / "flask")
        mcp = asyncio.run(time_mcp(root, args.runs))
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)
    rows = [("CLI recall, store opened cold (`--no-daemon --no-refresh`)", cold),
            ("CLI recall, store opened cold with its incremental pass (`--no-daemon`)", cold_refresh),
            ("CLI recall through the daemon socket", via_socket),
            ("CLI recall through the daemon from `src/flask` (root found, no `--root`)",
             from_subfolder),
            ("MCP `recall` tool round trip (daemon running)", mcp)]
    print(f"flask 3.1.0, {args.runs} runs each, whole process for the CLI rows\n")
    print("| path | p50 ms | p95 ms |\n|---|---:|---:|")
    for label, values in rows:
        print(f"| {label} | {statistics.median(values):.0f} | {_p(values, 0.95):.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
