"""What gets embedded for a chunk. Its hash keys the chunk's vector, so a
chunk whose embedding text is unchanged is never embedded again.

Chosen on the retrieval dev set (docs/decisions.md, "Embedding text").
"""

from __future__ import annotations

from ctxls.index.model import content_hash

# Bump when embedding_text() changes: stored vectors of the old text are dropped.
EMBED_TEXT_VERSION = 1
# The tokenizer keeps embeddings.MAX_TOKENS (128); 2,000 characters always
# cover them (and changing this would change every long chunk's hash).
MAX_EMBED_CHARS = 2000


def embedding_text(path: str, symbol: str | None, body: str) -> str:
    header = f"{path} {symbol}" if symbol else path
    return f"{header}\n{body[:MAX_EMBED_CHARS]}"


def embedding_hash(path: str, symbol: str | None, body: str) -> str:
    return content_hash(embedding_text(path, symbol, body))


def memory_embedding_text(symbol: str | None, text: str) -> str:
    """What gets embedded for a written memory row: its text (and a segment's
    heading path), not its id, which is often an opaque key. Changing this
    changes every row's embed_hash, so old vectors are simply never used again."""
    return f"{symbol}\n{text[:MAX_EMBED_CHARS]}" if symbol else text[:MAX_EMBED_CHARS]
