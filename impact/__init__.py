"""Impact analysis: callers, callees, risk. Depends on ctxls.index only.

Entry points are in ``ctxls.impact.analysis``: ``analyze`` (the Impact of a
symbol or of the name at a position), ``definitions_at``, ``definitions_in``
and ``outgoing_calls``. docs/architecture.md has the code map."""
