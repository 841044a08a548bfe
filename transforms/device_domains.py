"""
Device domains: the constraint store of plan-devices.

A *domain* stands for "the scope some values must share". Domains form a union-find forest
(union by size, path halving, so a whole module solves in near-linear time); each root holds
the SEScope its class is constrained to so far and a note on where that constraint came from.

- `unify(a, b)` merges two classes, joining their scopes (SEScope Join); when both constrain
  a field differently it returns a `Conflict` describing both sides instead of merging.
- `constrain(d, scope, origin)` joins one class with a fixed scope.
- `default(d, fallback)` fills the class's unconstrained fields (SEScope Default); it never fails.

The store knows nothing about IR: the pass decides which domains to create and reports a
conflict at the op where it arose.
"""

from __future__ import annotations

from dataclasses import dataclass

from xrelay.dialects.se_scope import SEScopeAttr

UNCONSTRAINED = SEScopeAttr()


class Domain:
    """One class member; only roots carry a meaningful `scope` and `origin`."""

    __slots__ = ("parent", "size", "scope", "origin")

    def __init__(self, scope: SEScopeAttr, origin: str | None):
        self.parent: Domain = self
        self.size = 1
        self.scope = scope
        self.origin = origin


@dataclass(frozen=True)
class Conflict:
    """Two classes that could not be joined: each side's scope and where it came from."""

    first: SEScopeAttr
    first_origin: str
    second: SEScopeAttr
    second_origin: str


class DeviceDomains:
    """A union-find of domains over SEScopes."""

    def __init__(self) -> None:
        self.domains: list[Domain] = []
        self._defaults: dict[tuple[SEScopeAttr, SEScopeAttr], SEScopeAttr] = {}

    def fresh(self, scope: SEScopeAttr = UNCONSTRAINED, origin: str | None = None) -> Domain:
        domain = Domain(scope, None if scope is UNCONSTRAINED else origin)
        self.domains.append(domain)
        return domain

    def find(self, domain: Domain) -> Domain:
        while domain.parent is not domain:
            domain.parent = domain.parent.parent  # path halving
            domain = domain.parent
        return domain

    def scope(self, domain: Domain) -> SEScopeAttr:
        return self.find(domain).scope

    def unify(self, a: Domain, b: Domain) -> Conflict | None:
        ra, rb = self.find(a), self.find(b)
        if ra is rb:
            return None
        joined = _join(ra.scope, rb.scope)
        if joined is None:
            return Conflict(ra.scope, ra.origin or "?", rb.scope, rb.origin or "?")
        origin = ra.origin if ra.origin is not None else rb.origin
        if ra.size < rb.size:
            ra, rb = rb, ra
        rb.parent = ra
        ra.size += rb.size
        ra.scope, ra.origin = joined, origin
        return None

    def constrain(self, domain: Domain, scope: SEScopeAttr, origin: str) -> Conflict | None:
        root = self.find(domain)
        joined = _join(root.scope, scope)
        if joined is None:
            return Conflict(root.scope, root.origin or "?", scope, origin)
        if root.origin is None and scope is not UNCONSTRAINED:
            root.origin = origin
        root.scope = joined
        return None

    def default(self, domain: Domain, fallback: SEScopeAttr) -> None:
        root = self.find(domain)
        key = (root.scope, fallback)
        if key not in self._defaults:  # few distinct scopes: build each result once
            self._defaults[key] = root.scope.default(fallback)
        root.scope = self._defaults[key]

    def roots(self) -> list[Domain]:
        return [d for d in self.domains if d.parent is d]


def _join(a: SEScopeAttr, b: SEScopeAttr) -> SEScopeAttr | None:
    """SEScope Join, skipping the attribute construction in the common trivial cases."""
    if b is UNCONSTRAINED or a == b:
        return a
    if a is UNCONSTRAINED:
        return b
    return a.join(b)
