"""Which grammar handles a path, which files are indexed by default, and a
per-thread parser cache.

Languages are the tree-sitter-language-pack names. Markdown is listed here
because it has its own chunking (sections by heading), but the chunker splits
it by lines rather than with the tree-sitter grammar.
"""

from __future__ import annotations

import posixpath
import threading

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Parser

_LANGUAGE_BY_EXTENSION: dict[str, str] = {
    "py": "python",
    "pyi": "python",
    "js": "javascript",
    "jsx": "javascript",
    "mjs": "javascript",
    "cjs": "javascript",
    "ts": "typescript",
    "mts": "typescript",
    "cts": "typescript",
    "tsx": "tsx",
    "go": "go",
    "rs": "rust",
    "java": "java",
    "c": "c",
    "h": "c",
    "cc": "cpp",
    "cpp": "cpp",
    "cxx": "cpp",
    "hpp": "cpp",
    "hh": "cpp",
    "hxx": "cpp",
    "rb": "ruby",
    "php": "php",
    "md": "markdown",
    "markdown": "markdown",
}

# Extension-less files whose content is in a known language.
_LANGUAGE_BY_FILENAME: dict[str, str] = {
    "Gemfile": "ruby",
    "Rakefile": "ruby",
    "Podfile": "ruby",
    "Vagrantfile": "ruby",
}

_DOC_EXTENSIONS = frozenset({"md", "markdown", "rst", "txt", "adoc"})

# Indexed by default: every language above, prose, and hand-written config and
# scripts (chunked as line windows). JSON is left out on purpose: in most
# repositories it is fixtures, lock files or generated data.
DEFAULT_INCLUDE: tuple[str, ...] = (
    *_LANGUAGE_BY_EXTENSION,
    "rst",
    "txt",
    "adoc",
    "toml",
    "yaml",
    "yml",
    "ini",
    "cfg",
    "sh",
)


def _extension(path: str) -> str:
    name = posixpath.basename(path.replace("\\", "/"))
    stem, dot, extension = name.rpartition(".")
    return extension.lower() if dot and stem else ""


def language_for_path(path: str) -> str | None:
    """The language whose chunker handles ``path``, or None for plain text."""
    extension = _extension(path)
    if extension:
        return _LANGUAGE_BY_EXTENSION.get(extension)
    return _LANGUAGE_BY_FILENAME.get(posixpath.basename(path.replace("\\", "/")))


# Configuration and data: their own recall kind, so a CI file that names a
# feature does not outrank the code implementing it.
_CONFIG_EXTENSIONS = frozenset({"toml", "yaml", "yml", "ini", "cfg", "json", "conf", "properties"})


def chunk_kind_for_path(path: str) -> str:
    """The recall kind of a file's chunks: "doc" (prose), "config", or "code"."""
    extension = _extension(path)
    if extension in _DOC_EXTENSIONS:
        return "doc"
    return "config" if extension in _CONFIG_EXTENSIONS else "code"


_thread_state = threading.local()


def parser_for(language: str) -> "Parser":
    """A parser for ``language``, cached per thread: a Parser must not be used
    by two threads at once, and creating one costs more than a small parse."""
    parsers: dict[str, Parser] | None = getattr(_thread_state, "parsers", None)
    if parsers is None:
        parsers = _thread_state.parsers = {}
    parser = parsers.get(language)
    if parser is None:
        # Imported on first use: the CLI's daemon path never parses anything.
        from tree_sitter_language_pack import get_parser

        parser = parsers[language] = get_parser(language)  # type: ignore[arg-type]
    return parser
