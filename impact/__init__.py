"""Impact analysis (callers, callees, risk). Depends on ctxls.index only."""
