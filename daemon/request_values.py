"""What no request may carry, on any transport, checked on the standard
library alone (the MCP bridge checks each line before it loads anything).

The check itself lives in ``ctxls.index.vocabulary`` (standard library
only too), so that the engine applies the same one to what reaches a store
by another way than a request (``ctxls memory import``)."""

from __future__ import annotations

from ctxls.index.vocabulary import MAX_INT, MIN_INT, first_invalid

__all__ = ["MAX_INT", "MIN_INT", "first_invalid"]
