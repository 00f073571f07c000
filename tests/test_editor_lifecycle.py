"""What an editor's session leaves in the server's log (which editors show as
their output channel): `$/cancelRequest` races and a clean stop log nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rawrpc import RawConnection


def test_cancelling_finished_or_unknown_requests_and_a_clean_stop_log_nothing(repo: Path,
                                                                               tmp_path: Path) -> None:
    log = tmp_path / "stderr.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "ctxls.daemon.cli", "serve", "--stdio"],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr)

        def write(data: bytes) -> None:
            process.stdin.write(data)
            process.stdin.flush()

        conn = RawConnection(process.stdout, write)
        uri = repo.resolve().as_uri()
        assert "result" in conn.request("initialize", {
            "processId": None, "rootUri": uri, "capabilities": {},
            "workspaceFolders": [{"uri": uri, "name": repo.name}],
            "initializationOptions": {"embeddings": False}}, 1)
        conn.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        assert "result" in conn.request("ctxls/status", {}, 2)
        # What VS Code does all the time: cancel a lens resolve that just got its answer.
        conn.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 2}})
        conn.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "never-sent"}})
        # Ignored, and nothing else is: the next request is answered.
        assert conn.request("ctxls/status", {}, 3)["result"]["root"]
        assert conn.request("shutdown", None, 4) == {"jsonrpc": "2.0", "id": 4, "result": None}
        conn.send({"jsonrpc": "2.0", "method": "exit"})
        assert process.wait(timeout=30) == 0
    text = log.read_text()
    assert "Cancel notification" not in text
    assert not [line for line in text.splitlines() if " WARNING " in line or " ERROR " in line
                or "Traceback" in line], text
