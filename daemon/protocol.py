"""JSON-RPC hygiene for the LSP connection: every request gets an answer.

pygls logs and drops a request whose params do not deserialize, and a body
that is not a JSON-RPC object; JSON-RPC 2.0 wants an error response for
each. :class:`CtxlsProtocol` answers them: -32602 (with ``data.param``) for
params of the wrong shape, -32600 for a body that is not a request object or
an id that is neither a number nor a string, -32700 for a body that is not
JSON (``send_parse_error``, called from the server's error hook). An
internal error carries no traceback unless ``CTXLS_DEBUG`` is set, and an
answer pygls cannot encode still answers its request with -32603 (both in
app.py: its converter and its error hook). (Engine errors keep their
protocol codes in every handler: app.py's registration raises them as
JSON-RPC errors.)
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import weakref
from typing import Any

from cattrs.errors import ClassValidationError
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method
from pygls.protocol.json_rpc import RPCNotification, RPCRequest

from ctxls.daemon.edits import apply_changes
from ctxls.daemon.framing import BAD_FRAME_METHOD, OVERSIZED_METHOD, frame
from ctxls.daemon.socket_server import is_notification, oversized_reply, valid_id
from ctxls.daemon.request_values import first_invalid
from ctxls.daemon.uris import open_document
from ctxls.index.discovery import DEFAULT_MAX_FILE_BYTES

log = logging.getLogger(__name__)

def bad_param(exc: BaseException | None) -> str:
    """The dotted path of the first param cattrs could not structure
    (``textDocument.uri``), or "params" when it does not say."""
    path: list[str] = []
    while isinstance(exc, ClassValidationError) and exc.exceptions:
        inner = exc.exceptions[0]
        names = [getattr(note, "name", None) for note in getattr(inner, "__notes__", [])]
        name = next((n for n in names if isinstance(n, str)), None)
        if name is None:
            break
        path.append(name)
        exc = inner
    if path and path[0] == "params":
        path = path[1:]
    # lsprotocol's attributes are snake_case; the wire's names are camelCase.
    return ".".join(_camel(name) for name in path) or "params"


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.capitalize() for word in rest)


class _Answered:
    """A message already answered (or rightly ignored) while being structured."""

    jsonrpc = None


ANSWERED = _Answered()


class _AnsweredCancels(logging.Filter):
    """pygls warns of each `$/cancelRequest` for a request it no longer
    holds; LSP says one for a request already answered (the usual race: an
    editor cancels a code lens resolve that just finished) or never seen is
    simply ignored, so the warning is noise in every editor's output."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Cancel notification for unknown message id")


logging.getLogger("pygls.protocol.json_rpc").addFilter(_AnsweredCancels())


class CtxlsProtocol(LanguageServerProtocol):
    # Requests before `initialize` are refused (-32002), a second `initialize`
    # and requests after `shutdown` too (-32600).
    initialize_seen = False
    shutdown_seen = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # uri -> the open document (pygls's TextDocument) that lost sync with its
        # editor; a reopen makes a new document, which is in sync again. Weak:
        # a closed document's text is not kept alive here.
        self.out_of_sync: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()

    def send_error(self, msg_id: Any, code: int, message: str, data: Any = None) -> None:
        """An error reply; a plain dict, so a null id is sent as null (JSON-RPC
        requires it) instead of being left out."""
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self.send_raw({"jsonrpc": "2.0", "id": msg_id if valid_id(msg_id) else None, "error": error})

    def send_raw(self, message: dict[str, Any]) -> None:
        """A message written as a frame on the transport's writer (one pygls's
        own types cannot say, such as an error reply with a null id)."""
        if self.writer is None:
            return
        written = self.writer.write(frame(message))
        if inspect.isawaitable(written):  # an asyncio transport's writer
            asyncio.ensure_future(written)

    def send_parse_error(self, exc: BaseException) -> None:
        self.send_error(None, -32700, f"parse error: {exc}")

    def structure_message(self, data: dict[str, Any]):
        if data.get("method") == OVERSIZED_METHOD and isinstance(data.get("params"), dict):
            self.send_raw(oversized_reply(data["params"]))
            return ANSWERED
        if data.get("method") == BAD_FRAME_METHOD and isinstance(data.get("params"), dict):
            self.send_error(None, -32700, f"parse error: a message header without a usable "
                            f"Content-Length ({data['params'].get('problem')}); what followed it "
                            "was skipped up to the next Content-Length header")
            return ANSWERED
        if "jsonrpc" in data and "method" in data and not isinstance(data["method"], str):
            if "id" in data:  # a notification never gets a reply
                self.send_error(data["id"], -32600, "invalid request: method must be a string")
            return ANSWERED
        if "jsonrpc" in data and str(data.get("method")).startswith("$/") and valid_id(data.get("id")):
            # LSP: "$/" methods are notifications; a request of one is MethodNotFound.
            self.send_error(data["id"], -32601, f"method not found: {data['method']} "
                            "(a notification, never a request)")
            return ANSWERED
        if ("jsonrpc" in data and valid_id(data.get("id")) and isinstance(data.get("method"), str)
                and is_notification(data["method"])):
            # A request of a notification method (didOpen, initialized, exit with
            # an id): pygls ran it and answered nothing, so the request hung.
            self.send_error(data["id"], -32600, f"invalid request: {data['method']} is a "
                            "notification, which takes no id; it was not run")
            return ANSWERED
        if ("jsonrpc" in data and "method" in data and valid_id(data.get("id"))
                and (invalid := first_invalid(data.get("params"))) is not None):
            # A value no request may carry (NUL, lone surrogate, out-of-range
            # integer, non-finite number): refused before any handler sees it.
            param, problem = invalid
            self.send_error(data["id"], -32602, f"invalid param {param!r}: {problem}",
                            {"param": param})
            return ANSWERED
        if "jsonrpc" in data and isinstance(data.get("method"), str):
            # JSON-RPC lets a request or notification leave params out; pygls's
            # message types require the key, and the -32602 below came before
            # the answers that do not depend on params (-32601, -32002, -32600).
            data.setdefault("params", None)
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            method, msg_id = data.get("method"), data.get("id")
            if "method" not in data:
                if "id" not in data:  # neither a request, a notification nor a reply
                    self.send_error(None, -32600, "invalid request: no method")
                return ANSWERED  # else a client's reply we cannot read: nobody waits on it
            if "id" not in data:
                log.warning("dropped notification %r with invalid params", method)
                return ANSWERED  # a notification never gets a reply
            if not valid_id(msg_id) or not isinstance(method, str):
                self.send_error(None, -32600, "invalid request: id must be a number or a string "
                                "and method a string")
            elif data.get("jsonrpc") != "2.0":  # "jsonrpc": 2.0, a number, refused by the converter
                self.send_error(msg_id, -32600, "invalid request: not a JSON-RPC 2.0 request object")
            else:
                param = bad_param(exc.__cause__)
                self.send_error(msg_id, -32602, f"invalid params for {method}: {param}",
                                {"param": param})
            return ANSWERED

    def handle_message(self, message: Any) -> None:
        if message is ANSWERED:
            return
        if not hasattr(message, "jsonrpc") or message.jsonrpc != "2.0":
            # [], 5, "x", an object without "jsonrpc": 2.0
            msg_id = message.get("id") if isinstance(message, dict) else getattr(message, "id", None)
            self.send_error(msg_id, -32600, "invalid request: not a JSON-RPC 2.0 request object")
            return
        if not hasattr(message, "id") and not getattr(message, "method", None):
            # {"jsonrpc": "2.0"} alone: neither a notification nor a reply
            self.send_error(None, -32600, "invalid request: no method")
            return
        if isinstance(message, RPCRequest) and not valid_id(message.id):
            self.send_error(None, -32600, "invalid request: id must be a number or a string")
            return
        if (not self.initialize_seen and not isinstance(message, RPCRequest)
                and isinstance(message, RPCNotification) and message.method != types.EXIT):
            # LSP: dropped until `initialize`. Run, each failed for want of a
            # workspace and the editor got an "Error in server" dialog.
            log.warning("dropped notification %r sent before initialize", message.method)
            return
        if isinstance(message, RPCRequest) and not self.initialize_seen:
            if message.method != types.INITIALIZE:
                # LSP's answer; served, a remember would be acknowledged into the
                # session-only store of a daemon without folders, and lost.
                self.send_error(message.id, -32002, "server not initialized: send initialize "
                                "first")
                return
            self.initialize_seen = True
        elif isinstance(message, RPCRequest) and message.method == types.INITIALIZE:
            # LSP: sent once. Served again it replaced the folders and options
            # (an owner, embeddings) under requests already answered for the first.
            self.send_error(message.id, -32600, "invalid request: initialize was already sent")
            return
        if isinstance(message, RPCRequest) and self.shutdown_seen:
            # pygls drops it; LSP wants InvalidRequest for requests after shutdown.
            self.send_error(message.id, -32600, "invalid request: the server is shutting down")
            return
        if isinstance(message, RPCRequest) and message.method == types.SHUTDOWN:
            self.shutdown_seen = True
        super().handle_message(message)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams):
        """pygls's, announcing UTF-16 whatever the client offers. Every column
        this server sends or reads (impact's call ranges, code lenses, call
        hierarchy, hits' range ends) counts UTF-16 units, the encoding LSP
        requires of every server; pygls took the client's first choice
        (Neovim offers UTF-8 first), and those columns were then wrong on
        any line with a non-ASCII character before them."""
        if params.capabilities.general is not None:
            params.capabilities.general.position_encodings = None
        return (yield from super().lsp_initialize(params))

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        """pygls's, with edits applied as LSP defines them (daemon/edits.py).
        An edit whose range names no place in the buffer (inverted, or past
        its end) means the editor's text and this copy differ: the buffer
        keeps its last good text, takes no further incremental edit until a
        full-text change (or a reopen) brings the editor's text, and the
        client is told once (window/showMessage). A buffer over the size bound
        takes no incremental edit either: its text is never indexed or read,
        and applying edits to 20 MB would stall every request."""
        uri = params.text_document.uri
        document = open_document(self.workspace, uri)
        if document is None:
            # Never opened (or closed already): nothing to apply it to. pygls
            # raised KeyError, which reached the user as an error dialog.
            log.warning("didChange for %s, which is not open: ignored", uri)
            return
        text = self._edited_text(uri, document, params.content_changes)
        if text is not None:
            self.workspace.update_text_document(
                params.text_document, types.TextDocumentContentChangeWholeDocument(text=text))
        if (user_handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield user_handler, (params,), None

    def _edited_text(self, uri: str, document: Any,
                     changes: list[types.TextDocumentContentChangeEvent]) -> str | None:
        """The buffer's text after ``changes``, or None when none applied."""
        if any(isinstance(change, types.TextDocumentContentChangeWholeDocument)
               for change in changes):
            self.out_of_sync.pop(uri, None)  # the editor's text comes: in sync again
        in_sync = self.out_of_sync.get(uri) is not document
        text, problem = apply_changes(
            document.source,
            [(getattr(change, "range", None), change.text) for change in changes],
            document.position_codec.encoding,
            editable=lambda text: in_sync and len(text) <= DEFAULT_MAX_FILE_BYTES)
        if problem is not None:
            self.lose_sync(uri, document, str(problem))
        return text

    def lose_sync(self, uri: str, document: Any, problem: str) -> None:
        self.out_of_sync[uri] = document
        message = (f"ctxls: {uri} is out of sync with the editor: an edit's range could not be "
                   f"applied ({problem}). ctxls keeps its last good text until the editor sends "
                   "the whole text (close and reopen the file).")
        log.warning("%s", message)
        self.notify(types.WINDOW_SHOW_MESSAGE,
                    types.ShowMessageParams(types.MessageType.Warning, message))


def is_parse_error(error: BaseException) -> bool:
    """A body that is not JSON (or not UTF-8, nested too deep to parse, or with
    an integer of more digits than Python converts): answered with -32700.
    (JSONDecodeError and UnicodeDecodeError are ValueErrors.)"""
    return isinstance(error, (ValueError, RecursionError))
