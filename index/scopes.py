"""Memory scopes: which written rows a request sees, and where it writes.

A tenant string means "that tenant plus the shared tier"; the reserved scope
``@global`` is the shared tier alone. A request without a scope gets the
daemon's ``owner`` as its tenant, or, when there is no owner, sees every row
and writes to the shared tier (a single-user daemon). Under ``strictScope`` a
request without a scope is refused (:class:`ScopeRequired`), so a misconfigured
multi-tenant client can never fall through to "everything".

Every memory query filters with :meth:`Scope.visible_sql`; every removal with
:meth:`Scope.owned_sql` (a tenant removes its own rows, never the shared tier's
or another tenant's). This module is the only place that decides either.
"""

from __future__ import annotations

from dataclasses import dataclass

from ctxls.index.errors import InvalidParams, ScopeRequired
from ctxls.index.vocabulary import MAX_SCOPE_CHARS

GLOBAL = "@global"
# Scope names starting with this are reserved for the daemon (only @global exists).
RESERVED_PREFIX = "@"


@dataclass(frozen=True)
class Scope:
    home: str                         # where writes go: a tenant, or GLOBAL
    visible: tuple[str, ...] | None   # scopes read; None: every scope (no owner, no scope)

    @property
    def unrestricted(self) -> bool:
        return self.visible is None

    def visible_sql(self, column: str = "scope") -> tuple[str, list[str]]:
        """A WHERE fragment (and its args) selecting the rows this scope may read."""
        if self.visible is None:
            return "1", []
        return f"{column} IN ({','.join('?' * len(self.visible))})", list(self.visible)

    def owned_sql(self, column: str = "scope") -> tuple[str, list[str]]:
        """The rows this scope may remove: its home only (every row when unrestricted)."""
        if self.visible is None:
            return "1", []
        return f"{column} = ?", [self.home]


EVERYTHING = Scope(home=GLOBAL, visible=None)


def named_scope(name: str) -> Scope:
    """The scope a request names: a tenant with the shared tier, or the shared tier."""
    if not isinstance(name, str) or not name or len(name) > MAX_SCOPE_CHARS:
        raise InvalidParams("scope", f"must be a non-empty string of at most {MAX_SCOPE_CHARS} "
                                     "characters")
    if name == GLOBAL:
        return Scope(home=GLOBAL, visible=(GLOBAL,))
    if name.startswith(RESERVED_PREFIX):
        raise InvalidParams("scope", f"names starting with {RESERVED_PREFIX!r} are reserved; "
                                     f"{GLOBAL!r} is the shared tier")
    return Scope(home=name, visible=(name, GLOBAL))


def resolve_scope(requested: str | None, owner: str | None, strict: bool, verb: str,
                  owner_blind: bool = False) -> Scope:
    """The scope of one request (docs/protocol.md, "Conventions"). ``owner_blind``:
    without a scope the request spans every scope even when there is an owner
    (forget by kind and author), still refused under strictScope."""
    if requested is not None:
        return named_scope(requested)
    if strict:
        raise ScopeRequired(verb)
    return named_scope(owner) if owner is not None and not owner_blind else EVERYTHING
