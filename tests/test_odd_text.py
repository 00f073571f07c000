"""Files whose text is odd at the byte level: a lone CR (a line end for
editors and LSP), a UTF-8 byte-order mark, invalid UTF-8, UTF-16 with its
mark, a NUL past the binary sniff. Every pointer the index gives (outline,
recall, get, impact, locate, `--vimgrep`) must name the place an editor, or
rg for `--vimgrep`, names."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import callers, write_tree
from ctxls.daemon.formatting import vimgrep_column, vimgrep_line
from ctxls.impact import analysis, ripgrep
from ctxls.index import languages
from ctxls.index.discovery import decode_text, indexed_buffer_text
from ctxls.index.engine import Engine
from ctxls.index.locate_paths import PathIndex

CTXLS = [sys.executable, "-m", "ctxls.daemon.cli"]


def editor_lines(text: str) -> list[str]:
    """The lines an editor (LSP) shows: ended by "\\n", "\\r\\n" or a lone "\\r"."""
    return [line.rstrip("\r\n") for line in re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)]


# -- a lone CR ends a line ----------------------------------------------------

LONE_CR = ("import os\n# comment\nX = 1\rY = 2\n\ndef gamma_mixed(a):\n    return a\n\n"
           "def delta_mixed(b):\r\n    return gamma_mixed(b)\n")


def test_decoding_ends_a_line_at_a_lone_cr_and_keeps_every_offset():
    """One code unit for one: columns stay, CRLF stays, only a lone CR becomes "\\n"."""
    data = b"a\rb\r\nc\r\rd\r"
    assert decode_text(data) == "a\nb\r\nc\n\nd\n"
    assert decode_text("a\rb".encode("utf-16")) == "a\nb"  # with its mark
    assert indexed_buffer_text("x\r\ud800y\r\n") == "x\n\ufffdy\r\n"


def test_a_lone_cr_on_disk_numbers_lines_as_an_editor_does(make_engine):
    """A stray CR shifted every later line of outline, recall, get and
    impact one up: the index split at "\\n" only, editors also at "\\r"."""
    engine = make_engine({"mixed.py": LONE_CR.encode()})
    shown = editor_lines(LONE_CR)
    gamma, call = shown.index("def gamma_mixed(a):"), shown.index("    return gamma_mixed(b)")
    outline = {d.symbol: d.line for d in engine.outline("mixed.py")}
    assert outline == {"gamma_mixed": gamma, "delta_mixed": gamma + 3}
    hit = next(h for h in engine.recall("gamma_mixed", kinds=["code"]).hits_by_kind["code"]
               if h.symbol == "gamma_mixed")
    assert hit.start_line == gamma
    # get by those lines is the editor's lines there (the stored text's hash is the file's)
    got = engine.get("mixed.py", hit.start_line, hit.end_line)
    assert got.text == "\n".join(shown[hit.start_line:hit.end_line + 1])
    assert engine.get("mixed.py").meta["lines"] == len(shown)
    assert callers(analysis.analyze(engine, "gamma_mixed")) == {("mixed.py", call, "delta_mixed", True)}


def test_a_file_of_lone_crs_is_many_lines(make_engine):
    text = "def only_cr(a):\r    return a\r\rdef uses_it():\r    return only_cr(1)\r"
    engine = make_engine({"classic_mac.py": text.encode()})
    assert engine.get("classic_mac.py").meta["lines"] == 5
    assert [(d.symbol, d.line) for d in engine.outline("classic_mac.py")] == [
        ("only_cr", 0), ("uses_it", 3)]
    assert engine.get("classic_mac.py", 4, 4).text == "    return only_cr(1)"
    assert callers(analysis.analyze(engine, "only_cr")) == {("classic_mac.py", 4, "uses_it", True)}


def test_a_buffer_with_a_lone_cr_is_numbered_as_the_editor_numbers_it(make_engine):
    """An editor's buffer enters the index by a file's rule (the daemon's
    edits already count a lone CR as a line end)."""
    engine = make_engine({"mixed.py": "def placeholder():\n    pass\n"})
    engine.set_buffer("mixed.py", LONE_CR)
    shown = editor_lines(LONE_CR)
    assert {d.symbol: d.line for d in engine.outline("mixed.py")}["gamma_mixed"] == shown.index(
        "def gamma_mixed(a):")
    assert callers(analysis.analyze(engine, "gamma_mixed")) == {
        ("mixed.py", shown.index("    return gamma_mixed(b)"), "delta_mixed", True)}


# -- a NUL past the binary sniff ------------------------------------------------


def test_a_nul_does_not_end_the_parse():
    """tree-sitter's lexers read a NUL as the end of input: the definition
    after `SEP = '\\0'` was an ERROR, its name read as a call."""
    source = b"SEP = '\x00'\n\ndef after_nul(a):\n    return a\n"
    tree = languages.parse_source(languages.parser_for("python"), source)
    assert not tree.root_node.has_error
    assert [child.type for child in tree.root_node.children][-1] == "function_definition"


def test_a_definition_after_a_late_nul_is_not_its_own_caller(make_engine):
    engine = make_engine({"mod.py": b"# padding line\n" * 600 + b"SEP = '\x00'\n\ndef latenul_fn(a):\n"
                                    b"    return a\n\ndef latenul_caller():\n    return latenul_fn(1)\n"})
    assert callers(analysis.analyze(engine, "latenul_fn")) == {("mod.py", 606, "latenul_caller", True)}


# -- `--vimgrep` lines and byte columns are rg's --------------------------------


def rg_places(folder: Path, needle: str, *names: str) -> dict[str, list[tuple[int, int]]]:
    out = subprocess.run([ripgrep.locate_rg(), "--vimgrep", "--no-config", "-F", needle, *names],
                         cwd=folder, capture_output=True, check=True).stdout
    found: dict[str, list[tuple[int, int]]] = {}
    for line in out.split(b"\n"):
        if line:
            name, row, column, _ = line.split(b":", 3)
            found.setdefault(name.decode(), []).append((int(row), int(column)))
    return found


VIMGREP_FILES = {
    "bom.py": b'\xef\xbb\xbfs = "\xc3\xa9"; helper(2)\n',
    "invalid.py": b'x = "\xf0\x9f\x98"; y = "\x80\x80"; helper(1)\n',
    "written_fffd.py": b'x = "\xef\xbf\xbd\xed\xa0\x80"; helper(1)\n',
    "utf16.py": '\ufeffs = "é😀"; helper(2)\r\nx\ry = helper(3)\n'.encode("utf-16-le"),
    "lone_cr.py": b'a = 1\rb = "\xc3\xa9"; helper(4)\r\n\rc = helper(5)\n',
}


def test_vimgrep_places_are_rgs_after_a_bom_invalid_utf8_utf16_and_a_lone_cr(tmp_path: Path):
    """The index's (line, UTF-16 character) of each `helper(` becomes rg's
    line and byte column: a UTF-8 mark is not counted, an invalid sequence
    (one U+FFFD in the index) is its bytes, a UTF-16 file counts its text's
    UTF-8 bytes, and a lone CR ends no line for rg."""
    write_tree(tmp_path, VIMGREP_FILES)
    expected = rg_places(tmp_path, "helper(", *VIMGREP_FILES)
    views: dict = {}
    for name, data in VIMGREP_FILES.items():
        path, ours = str(tmp_path / name), []
        for row, line in enumerate(decode_text(data).split("\n")):  # the index's lines
            if "helper(" in line:
                character = len(line[:line.index("helper(")].encode("utf-16-le")) // 2
                ours.append((vimgrep_line(path, row, views), vimgrep_column(path, row, character, views)))
        assert ours == expected[name], name


def test_impact_vimgrep_columns_after_a_bom_and_an_invalid_sequence_are_rgs(tmp_path: Path):
    """The CLI re-read the file with surrogate escapes: the mark counted as a
    character, each invalid byte one unit, against the index's columns."""
    write_tree(tmp_path, {"lib.py": b"def helper(a):\n    return a\n",
                          "bom_caller.py": b'\xef\xbb\xbfs = "\xc3\xa9"; helper(2)\nfrom lib import helper\n',
                          "bad_caller.py": b'from lib import helper\nx = "\xf0\x9f\x98"; y = helper(1)\n'})
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert subprocess.run([*CTXLS, "index", str(tmp_path)], capture_output=True).returncode == 0
    vim = subprocess.run([*CTXLS, "impact", "helper", "--vimgrep", "--no-daemon"], cwd=tmp_path,
                         capture_output=True, text=True, errors="replace", timeout=300)
    ours = sorted(tuple(line.split(":", 3)[:3]) for line in vim.stdout.splitlines())
    rg = rg_places(tmp_path, "helper(", "bom_caller.py", "bad_caller.py")
    assert ours == sorted((name, str(row), str(column)) for name, found in rg.items()
                          for row, column in found) == [("bad_caller.py", "2", "16"), ("bom_caller.py", "1", "11")]


# -- locate: a frame naming a root-level file by its absolute path --------------


def test_an_absolute_path_into_the_checkout_names_a_root_level_file(tmp_path: Path):
    """`File "<root>/app.py"` named nothing: a one-component tail of a path
    written with folders was refused, though the folders are the root."""
    (tmp_path / "link").symlink_to(tmp_path / "checkout", target_is_directory=True)
    root = tmp_path / "link"
    paths = PathIndex(["app.py", "pkg/runner.py", "pkg/app.py"], root=root)
    assert paths.resolve_path(f"{root}/app.py") == ("app.py", 1)
    assert paths.resolve_path(f"{tmp_path}/checkout/app.py") == ("app.py", 1)  # the root resolved
    assert paths.resolve_path(f"{root}/pkg/runner.py") == ("pkg/runner.py", 2)
    assert paths.resolve_path(f"{root}/./pkg/app.py") == ("pkg/app.py", 2)
    # Another checkout's root-level file of the same name is still not ours.
    assert paths.resolve_path("/home/someone/project/app.py") is None
    assert paths.resolve_path(f"{root}/missing.py") is None


def test_a_caller_in_a_utf16_file_is_found(make_engine):
    """The scoped sweep dropped a file whose raw bytes lacked the UTF-8 word
    before decoding it: a UTF-16 file's bytes never hold it."""
    engine = make_engine({
        "lib.py": "def helper(x):\n    return x\n",
        "win.py": "\ufefffrom lib import helper\n\ndef user():\n    return helper(2)\n".encode("utf-16-le"),
    })
    assert callers(analysis.analyze(engine, "helper")) == {("win.py", 3, "user", True)}
