"""A JSON model file that ships in ``index/models`` (the locate scorer, the
recall calibration): read whole and checked against the sha256 its loader
states, so an altered or damaged file is refused, never half-trusted."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path


def read_checked_json(path: Path, sha256: str | None, error: type[Exception]) -> dict:
    """The file's JSON; ``error`` if its sha256 is not ``sha256`` (None: any
    file, for a model being trained or compared)."""
    data = path.read_bytes()
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise error(f"{path} does not have the expected sha256")
    return json.loads(data)
