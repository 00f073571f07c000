"""The LSP daemon and CLI: thin shells over ctxls.index and ctxls.impact."""
