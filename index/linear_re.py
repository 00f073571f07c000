"""Regular expressions that run in linear time on untrusted text: RE2, for
the patterns Python's engine backtracks on (a Markdown heading of `![`,
unclosed `<script>`s, Rust's `pub(` without `)`). RE2 reads UTF-8, which a
lone surrogate is not (a buffer or a written text may carry one): those are
read as U+FFFD, one code point for one, so every offset holds."""

from __future__ import annotations

import re
from typing import AnyStr, Callable, Iterator

import re2

_SURROGATE = re.compile("[\ud800-\udfff]")


def _utf8(text: AnyStr) -> AnyStr:
    if isinstance(text, bytes) or text.isascii():
        return text
    return _SURROGATE.sub("\ufffd", text)


class LinearPattern:
    """The part of ``re.Pattern`` these callers use, on RE2."""

    def __init__(self, pattern: AnyStr):
        self._compiled = re2.compile(pattern)

    def fullmatch(self, text: AnyStr):
        return self._compiled.fullmatch(_utf8(text))

    def search(self, text: AnyStr):
        return self._compiled.search(_utf8(text))

    def finditer(self, text: AnyStr) -> Iterator:
        return self._compiled.finditer(_utf8(text))

    def sub(self, replacement: AnyStr | Callable, text: AnyStr) -> AnyStr:
        return self._compiled.sub(replacement, _utf8(text))
