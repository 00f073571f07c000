"""Impact is one answer per index (issue 38): the same request asked again
under CPU load gets the same callers, and the code lens says what the impact
view says, `partial` included, through the real daemon."""

from __future__ import annotations

import json
import multiprocessing
import subprocess
from pathlib import Path

from conftest import write_tree
from rawrpc import StdioDaemon
from ctxls.impact.callers import Limits


def busy_loop() -> None:
    while True:
        pass


def test_impact_is_the_same_answer_under_load_and_the_lens_says_the_same(tmp_path: Path):
    """Impact on one symbol of one index, asked back to back at different
    load: 0, then 21, 61 and 52 callers; a code lens said 87 where the impact
    view said 182 (the time budget cut the sweep short, the lens never said so)."""

    root = tmp_path / "proj"
    files = {"pkg/__init__.py": "", "pkg/clock.py": "def tick(n):\n    return n + 1\n"}
    for i in range(60):  # near: they import it
        files[f"pkg/near_{i:03}.py"] = (f"from pkg.clock import tick\n\n\ndef use_{i}(n):\n"
                                        f"    return tick(n) + tick({i})\n")
    for i in range(Limits().distant_files + 40):  # distant: any object's tick
        files[f"other/far_{i:03}.py"] = f"def far_{i}(timer):\n    return timer.tick({i})\n"
    write_tree(root, files)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    uri = (root / "pkg" / "clock.py").resolve().as_uri()
    daemon = StdioDaemon(root)
    burners = [multiprocessing.Process(target=busy_loop, daemon=True) for _ in range(3)]
    try:
        daemon.wait_indexed()
        for burner in burners:
            burner.start()
        request = daemon.conn.request
        answers = []
        for n in range(10):
            found = request("ctxls/impact", {"textDocument": {"uri": uri},
                                             "position": {"line": 0, "character": 4}}, f"i{n}")["result"]
            found.pop("elapsedMs")
            answers.append(json.dumps(found, sort_keys=True))
        assert len(set(answers)) == 1
        impact = json.loads(answers[0])
        assert impact["confirmed"] == 120 and impact["partial"] is True
        assert impact["unchecked"] == {"files": 40, "lines": 40}
        lenses = request("textDocument/codeLens", {"textDocument": {"uri": uri}}, "lens")["result"]
        (lens,) = [lens for lens in lenses if lens["data"]["symbol"] == "tick"]
        title = request("codeLens/resolve", lens, "resolve")["result"]["command"]["title"]
        unconfirmed = f" (+{impact['unconfirmed']} unconfirmed)" if impact["unconfirmed"] else ""
        assert title == f"120 callers{unconfirmed} · risk {impact['risk']} · partial"
    finally:
        for burner in burners:
            burner.kill()
        daemon.close()
