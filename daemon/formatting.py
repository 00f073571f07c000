"""What the CLI and the MCP bridge print: the protocol's JSON as people and
agents read it (1-based inclusive lines, one line per hit, ripgrep-like
colours on a terminal). Functions of the protocol's results; nothing here
talks to a daemon, and only the `--vimgrep` lines read a file (rg's line
and byte column of a position)."""

from __future__ import annotations

import bisect
import collections
import os
import re
from urllib.parse import unquote, urlparse


# Characters a terminal acts on instead of showing: the C0 controls but tab
# and newline, DEL, the C1 controls, and the bidirectional embeddings,
# overrides and isolates ("Trojan Source"). A repository's file names and
# text reach the terminal through every verb; escaped, they cannot retitle
# or clear it, set its clipboard, hide a line or reorder one.
_TERMINAL_ACTIVE = {c: f"\\u{c:04x}" for c in (*range(0x00, 0x09), *range(0x0b, 0x20),
                                                 *range(0x7f, 0xa0), *range(0x202a, 0x202f),
                                                 *range(0x2066, 0x206a))}


def terminal_safe(value):
    """``value`` (text, or the protocol's JSON) with every terminal-active
    character written as its ``\\uXXXX`` escape, for a terminal to show; the
    CR of a CRLF line end is a line end, not a control to show."""
    if isinstance(value, str):
        return value.replace("\r\n", "\n").translate(_TERMINAL_ACTIVE)
    if isinstance(value, list):
        return [terminal_safe(item) for item in value]
    if isinstance(value, dict):
        return {terminal_safe(key): terminal_safe(item) for key, item in value.items()}
    return value


class Style:
    """ANSI colours like ripgrep's, only when wanted (``--color``, NO_COLOR, a TTY)."""

    def __init__(self, enabled: bool):
        self.enabled = enabled

    @classmethod
    def for_stream(cls, choice: str, stream) -> "Style":
        if choice == "always":
            return cls(True)
        if choice == "never" or os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
            return cls(False)
        return cls(stream is not None and stream.isatty())

    def _sgr(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled and text else text

    def path(self, text: str) -> str:
        return self._sgr("35", text)

    def line(self, text: str) -> str:
        return self._sgr("32", text)

    def symbol(self, text: str) -> str:
        return self._sgr("1", text)

    def dim(self, text: str) -> str:
        return self._sgr("2", text)

    def heading(self, text: str) -> str:
        return self._sgr("1;34", text)


PLAIN = Style(False)


def line_range(chunk: dict) -> str:
    """A 0-based inclusive protocol range as people read it: 1-based."""
    start, end = chunk["startLine"] + 1, chunk["endLine"] + 1
    return f"{start}" if start == end else f"{start}-{end}"


# A hit or item whose body the answer's size bound left out (engine.BodyBudget).
BODY_LEFT_OUT = "(text left out by the answer's size bound: get it by id)"


def body_line(hit: dict, width: int | None = 100) -> str:
    """A written memory's text on one line (cut to ``width``; with None, as
    ``shown_flat`` shows it), or why it is missing."""
    if hit.get("truncated"):
        return BODY_LEFT_OUT
    text = hit.get("body") or ""
    return one_line(text, width) if width is not None else shown_flat(text)


# A body line longer than this is shown cut, saying how much is left out: a
# hit on a one-line SQL dump or data file printed a megabyte, more than an
# agent's tool answer may hold (the JSON answer keeps the whole text).
MAX_SHOWN_LINE_CHARS = 500


def shown_line(text: str) -> str:
    if len(text) <= MAX_SHOWN_LINE_CHARS:
        return text
    return f"{text[:MAX_SHOWN_LINE_CHARS]}… [{len(text) - MAX_SHOWN_LINE_CHARS:,} more characters]"


def shown_flat(text: str) -> str:
    """``text`` on one line (each run of whitespace one space), cut as ``shown_line`` cuts."""
    return shown_line(" ".join(text.split()))


def one_line(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[:width - 1] + "…"


def format_hits_human(groups: dict[str, list[dict]], style: Style = PLAIN,
                      bodies: bool = False) -> str:
    lines: list[str] = []
    for kind, hits in groups.items():
        if not hits:
            continue
        lines.append(style.heading(f"{kind}:"))
        for hit in hits:
            chunk = hit.get("chunk") or {}
            score = style.dim(f"{hit['score']:8.3f}")
            if "uri" in hit:  # a file: path:lines symbol
                where = f"{style.path(hit['path'])}:{style.line(line_range(chunk))}"
                lines.append(f"  {score}  {where}  {style.symbol(chunk.get('symbol') or '')}".rstrip())
            else:  # written memory: its id and what it says
                text = body_line(hit)
                lines.append(f"  {score}  {style.path(hit['path'])}  {text}".rstrip())
            if bodies and "uri" in hit and hit.get("truncated"):
                lines.append(f"    {BODY_LEFT_OUT}")
            elif bodies and "uri" in hit and hit.get("body"):
                first = chunk["startLine"] + 1
                width = len(str(chunk["endLine"] + 1))
                lines.extend(f"    {style.line(str(first + i).rjust(width))}  {shown_line(text)}"
                             for i, text in enumerate(hit["body"].split("\n")))
    return "\n".join(lines)


def vimgrep_path(item: dict) -> str:
    """The item's file relative to the current folder, as rg prints paths (a
    quickfix list resolves them from there), not to the repository root."""
    path = unquote(urlparse(item["uri"]).path)
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return path


# What ends a line for an editor and the index (LSP: "\n", "\r\n", a lone
# "\r"); rg and a quickfix list count lines at "\n" only.
_EDITOR_LINE_END = re.compile(rb"\r\n|\r|\n")


class RgView:
    """A file's bytes as `rg --vimgrep` counts lines and columns in them (its
    own after a UTF-8 byte-order mark, a UTF-16 file's text as UTF-8), with
    where each of the index's lines (an editor's) and each of rg's starts."""

    def __init__(self, data: bytes):
        # Imported here: the discovery module costs every CLI call 0.2 s to load.
        from ctxls.index.discovery import decode_as_written, is_utf16_marked

        if is_utf16_marked(data):  # rg reads it transcoded, line breaks as written
            data = decode_as_written(data).encode("utf-8", "surrogatepass")
        self.data = data.removeprefix(b"\xef\xbb\xbf")
        self.editor_starts = [0, *(m.end() for m in _EDITOR_LINE_END.finditer(self.data))]
        self.rg_starts = [0, *(m.end() for m in re.finditer(b"\n", self.data))]

    def place(self, line: int, character: int) -> tuple[int, int] | None:
        """(1-based rg line, 1-based byte column) of the UTF-16 ``character``
        on the index's 0-based ``line``; None past the last line."""
        if line >= len(self.editor_starts):
            return None
        start = self.editor_starts[line]
        end = self.editor_starts[line + 1] if line + 1 < len(self.editor_starts) else len(self.data)
        at = start + _bytes_of_units(self.data[start:end].rstrip(b"\r\n"), character)
        row = bisect.bisect_right(self.rg_starts, at) - 1
        return row + 1, at - self.rg_starts[row] + 1


def _bytes_of_units(line: bytes, units: int) -> int:
    """How many bytes of ``line`` hold its first ``units`` UTF-16 code units
    as the index decodes it: a maximal invalid UTF-8 sequence is one U+FFFD
    (one unit, 1 to 3 bytes), a U+FFFD written in the file three bytes."""
    at = counted = 0
    for char in line.decode("utf-8", "replace"):
        if counted >= units:
            break
        if char == "\ufffd" and not line.startswith(b"\xef\xbf\xbd", at):
            try:  # the invalid sequence here (at most 3 bytes): UTF-8's decoder says how long
                line[at:at + 4].decode("utf-8")
                size = 1  # not reached: a U+FFFD came of these bytes
            except UnicodeDecodeError as invalid:
                size = invalid.end
        else:
            size = len(char.encode("utf-8", "surrogatepass"))
        at += size
        counted += 2 if ord(char) > 0xFFFF else 1
    return at


def _rg_view(path: str, views: dict[str, RgView | None]) -> RgView | None:
    """The file at ``path`` as rg reads it, read once into ``views``; None when unreadable."""
    if path not in views:
        try:
            with open(path, "rb") as fh:
                views[path] = RgView(fh.read())
        except OSError:
            views[path] = None
    return views[path]


def vimgrep_line(path: str, line: int, views: dict[str, RgView | None]) -> int:
    """The 1-based line, as `rg --vimgrep` and a quickfix list count it (at
    "\n" only), of the index's 0-based ``line`` (an editor's: a lone CR
    ends one) of the file at ``path``; ``line + 1`` when the file cannot be
    read or no longer has that line."""
    view = _rg_view(path, views)
    place = view.place(line, 0) if view is not None else None
    return place[0] if place is not None else line + 1


def vimgrep_column(path: str, line: int, character: int, views: dict[str, RgView | None]) -> int:
    """The 1-based byte column, as `rg --vimgrep` and a quickfix list's `%c`
    count, of the UTF-16 ``character`` on the index's 0-based ``line`` of
    the file at ``path`` (read once into ``views``); ``character + 1`` when
    the file cannot be read or no longer has that line."""
    view = _rg_view(path, views)
    place = view.place(line, character) if view is not None else None
    return place[1] if place is not None else character + 1


def format_hits_vimgrep(groups: dict[str, list[dict]]) -> str:
    """`path:line:col:text` per file hit, as `rg --vimgrep` prints (for
    quickfix): the text is the hit's first line, the one the number names."""
    out = []
    views: dict[str, RgView | None] = {}
    for hits in groups.values():
        for hit in hits:
            if "uri" not in hit:
                continue  # written memory is not a file an editor can open
            first = shown_line((hit.get("body") or "").split("\n")[0].rstrip())
            path = vimgrep_path(hit)
            out.append(f"{path}:{vimgrep_line(path, hit['chunk']['startLine'], views)}:1:{first}")
    return "\n".join(out)


def partial_note(result: dict) -> str:
    if not result.get("partial"):
        return ""
    return f"\n(partial: {result.get('partialReason') or 'indexing is still running'})"


def assemble_text(result: dict, names: dict[str, str]) -> str:
    """An assembled context as read: ``(abstained: why)``, or the context
    followed by ``(weak: why)`` when it is thin (that line alone when no
    chunk fits the budget), then the partial note; the engine's note in
    ``names`` (:func:`in_caller_names`: ``under minScore 50`` is typed
    ``--min-score`` or ``min_score``)."""
    note = (result.get("stats") or {}).get("note")
    if note:
        note = in_caller_names(note, names)
    if result.get("abstained"):
        lines = [f"(abstained: {note or 'nothing relevant found'})"]
    else:
        lines = [result.get("context", ""), f"(weak: {note})" if result.get("weak") and note else ""]
    lines.append(partial_note(result).lstrip("\n"))
    return "\n".join(line for line in lines if line)


def weak_note(result: dict) -> str:
    """The line saying a recall's hits are probably unrelated (``weak``)."""
    if not result.get("weak"):
        return ""
    return f"\n(weak: {result.get('weakReason')}; these are only the nearest rows)"


def human_locate(result: dict) -> str:
    files = result.get("files", [])
    if not files:
        return "nothing located"
    lines: list[str] = []
    for found in files:
        lines.append(f"{found['score']:8.3f}  {found['path']}")
        for reason in found.get("why", []):
            # A frame's detail already says path:line.
            where = f" (line {reason['line'] + 1})" if "line" in reason and reason["signal"] != "frame" else ""
            lines.append(f"            {reason['signal']:8s} {reason['detail']}{where}")
        for chunk in found.get("chunks", []):
            lines.append(f"            chunk    {found['path']}:{chunk['startLine'] + 1}-"
                         f"{chunk['endLine'] + 1}  {chunk.get('symbol') or ''}".rstrip())
    return "\n".join(lines) + partial_note(result)



def status_lines(status: dict, via: str, style: Style) -> str:
    embeddings = status.get("embeddings") or {}
    model = embeddings.get("model") or ("on" if embeddings.get("enabled") else "off")
    if embeddings.get("error"):
        model = f"off ({embeddings['error']})"
    state = status.get("state") or ("indexing" if status.get("indexing") else "ready")
    failure = status.get("storeError") or status.get("indexError")
    if failure:  # the index cannot be used or updated (a full disk …): why, in the state line
        state += f" ({failure['message']})"
    if via == "daemon":
        daemon = "running"
    elif via == "hosted":
        # Not "none": unless told to use no daemon, this process is the daemon (client.host).
        daemon = "this process hosts the engine (it indexes and embeds while it runs)"
    else:
        daemon = ("none: nothing is indexing or embedding now (keep one warm: "
                  f"ctxls serve --root {status['root']} --socket)")
    memory = status.get("memory") or {}
    memory_line = f"  memory   {memory.get('backend', 'sqlite')}"
    if status.get("memoryError"):
        memory_line += f" unreachable ({status['memoryError']['message']})"
    if status.get("quarantined"):
        memory_line += (f"; {status['quarantined']['memory']} rows quarantined (a store that was "
                        "not yours): ctxls trust-memory imports them")
    return (f"ctxls {status['version']}  root {style.path(status['root'])}\n"
            f"  store    {status['dbPath']}\n"
            f"{memory_line}\n"
            f"  files    {status['files']}   chunks {status['chunks']}   "
            f"vectors {status.get('vectors', 0)}   pending {status.get('pending', 0)}\n"
            f"  state    {state}   embeddings {model}\n"
            + (f"  {embeddings['servingText']}\n" if embeddings.get("servingText") else "")
            + languages_line(status)
            + left_out_line(status)
            + f"  watch    {watch_text(status.get('watch'))}\n"
            + f"  daemon   {daemon}")


def left_out_line(status: dict) -> str:
    """`skipped  3: unreadable 2, binary 1` and `unparsed 2: parse deadline
    2` (the files listed, by reason; read as line windows, without
    definitions), each line only when it counts files."""
    lines = ""
    for key, label in (("skipped", "skipped "), ("unparsed", "unparsed")):
        left = status.get(key) or {}
        if not left.get("count"):
            continue
        # Every file by its reason's kind (a daemon before `reasons`: the listed ones).
        reasons = left.get("reasons") or collections.Counter(
            entry["reason"].split(" (")[0] for entry in left.get("files", []))
        listed = ", ".join(f"{reason} {n}" for reason, n in collections.Counter(reasons).most_common())
        lines += f"  {label} {left['count']}: {listed}\n"
    return lines


def languages_line(status: dict) -> str:
    """`python 120, kotlin 14, make 2 (no grammar: line windows)`."""
    languages = status.get("languages") or {}
    if not languages:
        return ""
    listed = ", ".join(f"{language} {info['files']}" + ("" if info["definitions"] else " (windows)")
                       for language, info in languages.items())
    return f"  languages {listed}\n"


def watch_text(watch: dict | None) -> str:
    """How the files on disk are followed (status ``watch``), in words."""
    if not watch or watch.get("mode") == "off":
        reason = (watch or {}).get("reason")
        return "off: changes on disk are seen when an answer checks its files" + (
            f" ({reason})" if reason else "")
    if watch["mode"] == "native":
        polled = f"; {watch['reason']}" if watch.get("polled") else ""
        return f"following {watch['folders']} folders (native file events{polled})"
    if watch["mode"] == "poll":
        return f"polling {watch['folders']} folders: {watch.get('reason')}"
    return "starting"


# What each kind of mention is (ctxls.impact.callers._classify): occurrences
# of the name that are not call sites.
MENTION_KINDS = {"string": "in strings", "comment": "in comments", "text": "in files without a parser",
                 "import": "in imports", "definition": "other definitions' names",
                 "binding": "assigned", "elsewhere": "naming another symbol",
                 "other": "inside other words", "unchecked": "on lines left unchecked"}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _more(noun: str, past_limit: int, counted_only: int, why: str) -> str | None:
    """`… 12 more callers: 9 past -n (raise it to see them), 3 counted only
    (...)`: what a section leaves out, every part a count of its own."""
    if not past_limit + counted_only:
        return None
    parts = ([f"{past_limit} past -n (raise it to see them)"] if past_limit else []) \
        + ([f"{counted_only} counted only ({why})"] if counted_only else [])
    return f"  … {past_limit + counted_only} more {noun}: {', '.join(parts)}"


def not_defined_text(symbol: str, status: dict | None) -> str:
    """What impact's "no such definition" says: while a pass runs (a
    checkout's, longer than the wait for it), that the index may not hold
    the name yet, so an agent asks again rather than trusting "not defined"."""
    text = f"{symbol} is not defined in the index"
    if status is not None and status.get("state") == "indexing":
        text += " (it is still indexing a change on disk: ask again in a moment)"
    return text


def impact_lines(impact: dict, limit: int, style: Style) -> list[str]:
    """The CLI's (and MCP's text) impact answer. Every count is derivable
    from the others: callers listed + the "more callers" line = confirmed +
    unconfirmed; the mentions line adds up to the mentions; -n bounds each
    list (other definitions, callers, callees)."""
    confirmed, unconfirmed = impact["confirmed"], impact.get("unconfirmed", 0)
    mentions = impact["mentions"]
    # Lines past the analysis's file limits were never looked at: calls or
    # not, unknown (the headline called them "not calls").
    unchecked = impact.get("mentionKinds", {}).get("unchecked", 0)
    lines = [f"{style.symbol(impact['symbol'])}: risk {impact['risk']}, "
             f"{_plural(confirmed, 'confirmed caller')}, {unconfirmed} unconfirmed, "
             f"{_plural(mentions - unchecked, 'other mention')} (not calls), "
             + (f"{_plural(unchecked, 'line')} left unchecked (calls or not), " if unchecked else "")
             + f"complexity {impact['complexity']}"]
    matched = impact.get("definitionsMatched", 1)

    def where(location: dict) -> str:
        line = (location.get("selectionRange") or location["range"])["start"]["line"] + 1
        return f"{style.path(location['path'])}:{style.line(str(line))}  {location.get('symbol') or ''}"

    for definition in impact.get("definitions", []):
        lines.append(f"  definition  {where(definition)}"
                     + (f"  (best of {matched} definitions)" if matched > 1 else ""))
    others = impact.get("perDefinition", [])[1:]
    for other in others[:limit]:
        lines.append(f"  other       {where(other['definition'])}  {other['confirmed']} confirmed, "
                     f"{other['unconfirmed']} unconfirmed, risk {other['risk']}")
    shown_others = min(limit, len(others))
    lines.append(_more("definitions", len(others) - shown_others, max(matched - 1 - len(others), 0),
                       "answered for the first ones only"))
    callers, callees = impact.get("callers", []), impact.get("callees", [])
    for caller in callers[:limit]:
        start = caller["range"]["start"]["line"] + 1
        mark = ("" if caller.get("confirmed")
                else style.dim(f"  (unconfirmed: {caller.get('reason', 'unknown')})"))
        lines.append(f"  caller  {style.path(caller['path'])}:{style.line(str(start))}  "
                     f"{caller.get('symbol') or ''}{mark}".rstrip())
    listed_callers = min(limit, len(callers))
    reasons = ", ".join(f"{reason} {n}" for reason, n in impact.get("unconfirmedReasons", {}).items())
    lines.append(_more("callers", len(callers) - listed_callers, impact.get("unconfirmedOmitted", 0),
                       f"unconfirmed by reason: {reasons}"))
    for callee in callees[:limit]:
        places = ", ".join(f"{d['path']}:{(d.get('selectionRange') or d['range'])['start']['line'] + 1}"
                           for d in callee.get("definitions", []))
        lines.append(f"  callee  {callee['symbol']}" + (f"  {places}" if places else ""))
    lines.append(_more("callees", len(callees) - min(limit, len(callees)), 0, ""))
    kinds = impact.get("mentionKinds", {})
    if kinds:
        lines.append(f"  mentions  {mentions}: " + ", ".join(
            f"{n} {MENTION_KINDS.get(kind, kind)}" for kind, n in sorted(kinds.items(), key=lambda kv: -kv[1])))
    lines.extend(f"  hedge   {h}" for h in impact.get("hedges", []))
    return [line for line in lines if line is not None]


def past_end_text(item: dict | None) -> str | None:
    """What to say when a line range starts past the file's end (the protocol
    answers it with empty text, which read as an empty range)."""
    meta = (item or {}).get("meta") or {}
    if "startLine" not in meta or "lines" not in meta or meta["startLine"] < meta["lines"]:
        return None
    return f"{item['id']} ends before line {meta['startLine'] + 1}"


# The word (an option's dashes kept) right before a slash, itself not part of a path.
_NAME_BEFORE_SLASH = re.compile(r"(?<![\w/.-])([\w-]+)/\Z")


def in_caller_names(message: str, names: dict[str, str]) -> str:
    """An engine error or note naming things as the caller knows them
    (``--budget-tokens``, ``budget_tokens``; the MCP tool ``locate``), not as
    the protocol does (``budgetTokens``, the method ``ctxls/locate``): the
    param an "invalid param" names, and any camelCase field or method the
    text mentions, as a whole name (``minScore``, not inside ``minScores``)."""
    params = set(names) | set(names.values())
    for field, typed in names.items():
        message = message.replace(f"invalid param {field!r}", f"invalid param {typed!r}")
        # `n` or `by` may be words; `startLine` is a field, `ctxls/locate` a method.
        if field != field.lower() or "/" in field:
            message = _rename_whole(message, field, typed, params)
    return message


def _rename_whole(message: str, field: str, typed: str, params: set[str]) -> str:
    """``field`` as a whole name in ``message`` written ``typed``. After a
    slash it is renamed only in a list of parameters (``startLine/endLine``),
    never inside a path or a method (``pkg/ctxls/locate.py``, ``ctxls/endLine``)."""
    def renamed(match: re.Match) -> str:
        if match.start() and message[match.start() - 1] == "/":
            before = _NAME_BEFORE_SLASH.search(message, 0, match.start())
            if before is None or before.group(1) not in params:
                return match.group()
        return typed

    return re.sub(rf"(?<!\w){re.escape(field)}(?!\w)", renamed, message)


# -- definitions (ctxls/symbols, ctxls/outline, ctxls/similar) ----------------------------------

def symbols_text(result: dict, style: Style = PLAIN) -> str:
    """One line per definition: path:line (its name's, 1-based), kind, the
    qualified name, its whole range, and how the name matched."""
    found = result.get("symbols") or []
    if not found:
        return "no definitions found" + partial_note(result)
    lines = []
    for definition in found:
        where = f"{style.path(definition['path'])}:{style.line(str(definition['line'] + 1))}"
        detail = style.dim(f"lines {line_range(definition)}, {definition['match']}")
        lines.append(f"{where}  {definition['kind']:9s} {style.symbol(definition['symbol'])}  {detail}")
    return "\n".join(lines) + partial_note(result)


def outline_text(result: dict, style: Style = PLAIN) -> str:
    """The file, then its definitions indented by nesting: `line: kind name
    (start-end)`, the line being its name's (1-based)."""
    if not result.get("symbols"):
        if result.get("partial"):  # its latest text was refused: its definitions are unknown
            return f"definitions of {result.get('path')} unknown" + partial_note(result)
        if result.get("indexed") is False and result.get("path") == ".":
            return "not indexed: . (the repository's root folder, not a file)"
        if result.get("indexed") is False:
            return (f"not indexed: {result.get('path')} (no such file, or one ctxls does not "
                    "index: a folder, binary, ignored or too large; `status` lists what was skipped)")
        return f"no definitions in {result.get('path')}"
    lines = [style.path(result["path"])]

    def add(definitions: list[dict], depth: int) -> None:
        for definition in definitions:
            lines.append(f"{'  ' * depth}{style.line(str(definition['line'] + 1))}: "
                         f"{definition['kind']} {style.symbol(definition['name'])}  "
                         f"{style.dim('(' + line_range(definition) + ')')}")
            add(definition.get("children") or [], depth + 1)

    add(result["symbols"], 1)
    return "\n".join(lines)


def similar_text(result: dict, style: Style = PLAIN) -> str:
    """The chunk asked about, then the code like it, as recall prints hits."""
    origin = result.get("origin")
    if origin is None:
        return "no indexed code at that line"
    by = "its vector" if result.get("mode") == "semantic" else "its identifiers"
    head = (f"like {style.path(origin['path'])}:{style.line(line_range(origin['chunk']))}  "
            f"{style.symbol(origin['chunk'].get('symbol') or '')} (by {by}):")
    if not result.get("hits"):
        return head + "\nnothing similar found"
    return head + "\n" + format_hits_human({"code": result["hits"]}, style).split("\n", 1)[1]
