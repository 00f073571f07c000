"""Graph views over the index: a file's node (chunks, import-edge counts) and
its neighbourhood by breadth-first search over resolved import edges."""

from __future__ import annotations

from dataclasses import dataclass

from ctxls.index.errors import InvalidParams
from ctxls.index.store import Connection

DIRECTIONS = ("in", "out", "both")
MAX_HOPS = 3
# A hub file (a package's __init__, a utils module) can reach most of a repo
# in two hops; the answer stops here and says it was truncated.
MAX_RELATED = 500


@dataclass
class ChunkInfo:
    symbol: str | None
    symbol_kind: str
    start_line: int
    end_line: int


@dataclass
class FileNode:
    path: str
    kind: str
    format: str
    chunks: list[ChunkInfo]
    imports_out: int
    imports_in: int


@dataclass
class Related:
    path: str
    hops: int
    dir: str  # "out": reached along imports only; "in": along importers only; else "both"


def _targets(conn: Connection, paths: list[str]) -> list[tuple[str, str]]:
    """(importer, imported) edges leaving ``paths``."""
    return conn.execute(
        f"SELECT DISTINCT f.path, i.target FROM imports i JOIN files f ON f.id = i.file_id "
        f"WHERE f.path IN ({','.join('?' * len(paths))}) AND i.target IS NOT NULL", paths).fetchall()


def _importers(conn: Connection, paths: list[str]) -> list[tuple[str, str]]:
    """(imported, importer) edges arriving at ``paths``."""
    return conn.execute(
        f"SELECT DISTINCT i.target, f.path FROM imports i JOIN files f ON f.id = i.file_id "
        f"WHERE i.target IN ({','.join('?' * len(paths))})", paths).fetchall()


def file_node(conn: Connection, path: str) -> FileNode | None:
    file = conn.execute("SELECT id, language FROM files WHERE path = ?", (path,)).fetchone()
    if file is None:
        return None
    rows = conn.execute("SELECT symbol, symbol_kind, kind, start_line, end_line FROM chunks "
                        "WHERE file_id = ? ORDER BY start_line, end_line", (file[0],)).fetchall()
    return FileNode(path=path, kind=rows[0][2] if rows else "code", format=file[1],
                    chunks=[ChunkInfo(r[0], r[1], r[3], r[4]) for r in rows],
                    imports_out=len({t for _, t in _targets(conn, [path]) if t != path}),
                    imports_in=len({s for _, s in _importers(conn, [path]) if s != path}))


def related(conn: Connection, path: str, direction: str = "both",
            hops: int = 1) -> tuple[list[Related], bool]:
    """Files within ``hops`` import edges of ``path`` (nearest first), and
    whether the answer was cut: by ``MAX_HOPS`` (when more hops were asked
    for and the next hop has files) or by ``MAX_RELATED``."""
    if direction not in DIRECTIONS:
        raise InvalidParams("dir", f"must be one of {', '.join(DIRECTIONS)}")
    if isinstance(hops, bool) or not isinstance(hops, int) or hops < 1:
        raise InvalidParams("hops", "must be a positive integer")
    if conn.execute("SELECT 1 FROM files WHERE path = ?", (path,)).fetchone() is None:
        return [], False
    found: dict[str, Related] = {}
    frontier = [path]
    for hop in range(1, min(hops, MAX_HOPS) + 1):
        reached = _step(conn, frontier, direction, found, path)
        for node, how in sorted(reached.items()):
            if len(found) == MAX_RELATED:
                return list(found.values()), True
            # A file first reached at this hop inherits its predecessors' direction.
            found[node] = Related(node, hop, how)
        frontier = list(reached)
        if not frontier:
            return list(found.values()), False
    more = hops > MAX_HOPS and bool(_step(conn, frontier, direction, found, path))
    return list(found.values()), more


def _step(conn: Connection, frontier: list[str], direction: str,
          found: dict[str, Related], origin: str) -> dict[str, str]:
    """Files one edge beyond ``frontier`` not seen yet -> the direction that reached them."""
    def via(source: str) -> str:
        return found[source].dir if source in found else ""

    reached: dict[str, set[str]] = {}
    edges = []
    if direction in ("out", "both"):
        edges += [(src, dst, "out") for src, dst in _targets(conn, frontier)]
    if direction in ("in", "both"):
        edges += [(src, dst, "in") for src, dst in _importers(conn, frontier)]
    for source, node, edge_dir in edges:
        if node == origin or node in found:
            continue
        earlier = via(source)
        reached.setdefault(node, set()).add(edge_dir if earlier in ("", edge_dir) else "both")
    return {node: dirs.pop() if len(dirs) == 1 else "both" for node, dirs in reached.items()}
