"""How far the daemon's embedding ETA is from the time embedding really took.

Starts `ctxls serve --stdio` (this checkout's) on a fresh copy of a
repository (no `.ctxls/`: a cold index, then every chunk embedded), as an
editor does, and records every "ctxls: embedding" work-done progress report
with its arrival time. For each report that shows an ETA, the error is
ETA / (time from that report to the progress end); the first such report is
what a user sees first.

    .venv/bin/python bench/embedding_eta.py [--repo PATH] [--out bench/results/editors-eta.json]

PATH defaults to this checkout's committed files (`git archive HEAD`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ETA = re.compile(r"ETA (\d+)m(\d+)s")
DONE = re.compile(r"embedding (\d+)/(\d+) chunks")
WAIT_S = 1800


class StdioClient:
    """Just enough of an LSP client: answers the server's requests with null."""

    def __init__(self, repo: Path):
        self.process = subprocess.Popen(
            [str(Path(sys.executable).with_name("ctxls")), "serve", "--stdio",
             "--clientProcessId", str(os.getpid())],
            cwd=repo, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.progress: list[tuple[float, dict]] = []
        self.ended = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        self.process.stdin.flush()

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            header = b""
            while not header.endswith(b"\r\n\r\n"):
                byte = stream.read(1)
                if not byte:
                    return
                header += byte
            length = int(re.search(rb"Content-Length: *(\d+)", header).group(1))
            message = json.loads(stream.read(length))
            if "id" in message and "method" in message:
                self.send({"id": message["id"], "result": None})
            if message.get("method") == "$/progress":
                value = message["params"]["value"]
                if str(message["params"]["token"]).startswith("ctxls-embed"):
                    self.progress.append((time.monotonic(), value))
                    if value["kind"] == "end":
                        self.ended.set()


def measure(repo: Path) -> dict:
    client = StdioClient(repo)
    uri = repo.as_uri()
    client.send({"id": 1, "method": "initialize", "params": {
        "processId": os.getpid(), "rootUri": uri, "workspaceFolders": [{"uri": uri, "name": repo.name}],
        "capabilities": {"window": {"workDoneProgress": True}}}})
    client.send({"method": "initialized", "params": {}})
    try:
        if not client.ended.wait(WAIT_S):
            raise SystemExit(f"no embedding progress end within {WAIT_S} s")
    finally:
        client.send({"id": 2, "method": "shutdown"})
        client.send({"method": "exit"})
        client.process.wait(timeout=60)
    end = client.progress[-1][0]
    begin = client.progress[0][0]
    estimates = []
    for at, value in client.progress:
        message = value.get("message") or ""
        found, counts = ETA.search(message), DONE.search(message)
        if found:
            eta = int(found.group(1)) * 60 + int(found.group(2))
            estimate = {"after_s": round(at - begin, 1), "eta_s": eta, "actual_s": round(end - at, 1),
                        "ratio": round(eta / max(end - at, 0.1), 2)}
            if counts and int(counts.group(1)):
                # The same report under the rate since the progress began (the
                # model's loading included), as the daemon computed it before.
                done, total = int(counts.group(1)), int(counts.group(2))
                since_begin = (total - done) / (done / max(at - begin, 1e-6))
                estimate["since_begin_ratio"] = round(since_begin / max(end - at, 0.1), 2)
            estimates.append(estimate)
    messages = [v.get("message") for _, v in client.progress]
    return {"embedding_s": round(end - begin, 1), "reports": len(client.progress),
            "first_message": messages[1] if len(messages) > 1 else None,
            "estimates": estimates}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, help="a repository to copy (default: this checkout at HEAD)")
    parser.add_argument("--out", type=Path, help="write a bench/results JSON file here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ctxls-eta-") as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        if args.repo is None:
            archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, check=True, capture_output=True)
            subprocess.run(["tar", "-x", "-C", str(repo)], input=archive.stdout, check=True)
        else:
            subprocess.run(["cp", "-a", f"{args.repo}/.", str(repo)], check=True)
            subprocess.run(["rm", "-rf", str(repo / ".ctxls")], check=True)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        load = os.getloadavg()[0]
        result = measure(repo)
    print(json.dumps(result, indent=1))
    if args.out is not None:
        first = result["estimates"][0] if result["estimates"] else None
        ratios = [e["ratio"] for e in result["estimates"]]
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
        args.out.write_text(json.dumps({
            "section": "Editors", "issue": 39, "date": time.strftime("%Y-%m-%d"),
            "commit": commit + ("+dirty" if dirty else ""),
            "command": "python bench/embedding_eta.py" + (f" --repo {args.repo}" if args.repo else ""),
            "machine": f"2 cores, loaded (load average {load:.1f})",
            "rows": [
                {"target": "first embedding ETA shown / time embedding really took from then",
                 "value": f"{first['ratio']}x ({first['eta_s']} s shown, {first['actual_s']} s taken)"
                 if first else "no ETA shown", "goal": "between 0.67x and 1.5x",
                 "met": bool(first and 0.67 <= first["ratio"] <= 1.5)},
                {"target": "the same first report with the rate since the progress began (the former ETA)",
                 "value": f"{first['since_begin_ratio']}x" if first and "since_begin_ratio" in first
                 else "not measured", "goal": None, "met": None},
                {"target": "median ETA / actual over every report",
                 "value": f"{statistics.median(ratios)}x" if ratios else "no ETA shown",
                 "goal": None, "met": None},
                {"target": "embedding pass", "value": f"{result['embedding_s']} s, "
                 f"{result['reports']} progress reports", "goal": None, "met": None}],
            "notes": "ctxls serve --stdio on a cold copy; the first report's message was "
                     f"{result['first_message']!r}."}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
