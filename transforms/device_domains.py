"""
Device domains: the constraint store of plan-devices, and the history of how it was solved.

A *domain* stands for "the scope some values must share". Domains form a union-find forest
(union by size, path halving, so a whole module solves in near-linear time); each root holds
the SEScope its class is constrained to so far and, for each of its four fields (device, id,
target, memory), the `Source` that fixed it: the constraint's `Origin` (the op or attribute,
where it is written), or a Default step and the source of the fallback's field.

- `unify(a, b)` merges two classes, joining their scopes (SEScope Join); each field keeps the
  source of the side that had it first. When both constrain a field differently it returns a
  `Conflict` with both sides' scopes and sources instead of merging.
- `constrain(d, scope, origin)` joins one class with a fixed scope; the fields it adds get
  `origin` as their source.
- `default(d, fallback, origin)` fills the class's unconstrained fields (SEScope Default),
  recording `origin` (and, for a fallback that is another class, that class's sources); it
  never fails.

The sources are recorded by the very operations that solve, so an explanation read off them
(`device_remarks.py`) cannot disagree with the plan. The store knows nothing about IR: the
pass decides which domains to create and reports a conflict at the op where it arose.
"""

from __future__ import annotations

from dataclasses import dataclass

from xrelay.dialects.se_scope import FIELDS, SEScopeAttr

UNCONSTRAINED = SEScopeAttr()


@dataclass(frozen=True, eq=False)
class Origin:
    """What a constraint or a Default step came from, e.g. `relay.on_device` at `f.mlir:7:3`."""

    what: str
    location: str | None = None
    note: str = ""
    """Said after the location, e.g. ", whose result the function returns"."""

    def __str__(self) -> str:
        where = f" at {self.location}" if self.location is not None else ""
        return f"{self.what}{where}{self.note}"


@dataclass(frozen=True, eq=False)
class Source:
    """Why one field of a class has its value: a constraint from `origin`, or, when `fallback`
    is set, Default from the scope `origin` describes, whose field came from `via` (None
    when the fallback is a fixed scope such as the default scope)."""

    origin: Origin
    fallback: SEScopeAttr | None = None
    via: Source | None = None


Sources = tuple[Source | None, ...]
"""One entry per SEScope field, in FIELDS order; None where the field is unconstrained."""

NO_SOURCES: Sources = (None,) * len(FIELDS)


class Domain:
    """One class member; only roots carry a meaningful `scope` and `sources`."""

    __slots__ = ("parent", "size", "scope", "sources")

    def __init__(self, scope: SEScopeAttr, sources: Sources):
        self.parent: Domain = self
        self.size = 1
        self.scope = scope
        self.sources = sources


@dataclass(frozen=True)
class Conflict:
    """Two classes that could not be joined: each side's scope and the sources of its fields."""

    first: SEScopeAttr
    first_sources: Sources
    second: SEScopeAttr
    second_sources: Sources

    @property
    def field(self) -> int:
        """The index (in FIELDS) of the first field both sides constrain differently."""
        pairs = zip(self.first.fields(), self.second.fields())
        return next(i for i, (a, b) in enumerate(pairs) if a is not None and b is not None and a != b)

    @property
    def first_origin(self) -> Origin:
        """Where the first side's conflicting field came from."""
        source = self.first_sources[self.field]
        assert source is not None
        return source.origin

    @property
    def second_origin(self) -> Origin:
        source = self.second_sources[self.field]
        assert source is not None
        return source.origin


class DeviceDomains:
    """A union-find of domains over SEScopes, with the source of every field."""

    def __init__(self) -> None:
        self.domains: list[Domain] = []
        self._defaults: dict[tuple[SEScopeAttr, SEScopeAttr], SEScopeAttr] = {}

    def fresh(self, scope: SEScopeAttr = UNCONSTRAINED, origin: Origin | None = None) -> Domain:
        sources = NO_SOURCES if origin is None else sources_of(scope, Source(origin))
        domain = Domain(scope, sources)
        self.domains.append(domain)
        return domain

    def find(self, domain: Domain) -> Domain:
        while domain.parent is not domain:
            domain.parent = domain.parent.parent  # path halving
            domain = domain.parent
        return domain

    def scope(self, domain: Domain) -> SEScopeAttr:
        return self.find(domain).scope

    def sources(self, domain: Domain) -> Sources:
        return self.find(domain).sources

    def unify(self, a: Domain, b: Domain) -> Conflict | None:
        ra, rb = self.find(a), self.find(b)
        if ra is rb:
            return None
        joined = _join(ra.scope, rb.scope)
        if joined is None:
            return Conflict(ra.scope, ra.sources, rb.scope, rb.sources)
        sources = _merge(ra.sources, rb.sources)
        if ra.size < rb.size:
            ra, rb = rb, ra
        rb.parent = ra
        ra.size += rb.size
        ra.scope, ra.sources = joined, sources
        return None

    def constrain(self, domain: Domain, scope: SEScopeAttr, origin: Origin) -> Conflict | None:
        root = self.find(domain)
        joined = _join(root.scope, scope)
        if joined is None:
            return Conflict(root.scope, root.sources, scope, sources_of(scope, Source(origin)))
        root.sources = _merge(root.sources, sources_of(scope, Source(origin)))
        root.scope = joined
        return None

    def default(self, domain: Domain, fallback: SEScopeAttr, origin: Origin, via: Sources = NO_SOURCES) -> None:
        """Default(domain, fallback); `origin` names the fallback, `via` the sources of its
        fields when it is another class."""
        root = self.find(domain)
        key = (root.scope, fallback)
        if key not in self._defaults:  # few distinct scopes: build each result once
            self._defaults[key] = root.scope.default(fallback)
        scope = self._defaults[key]
        if scope is root.scope or scope == root.scope:
            return
        filled: list[Source | None] = []
        made: dict[int, Source] = {}  # one Source per distinct `via`: fields filled together read as one step
        for i, (old, new) in enumerate(zip(root.scope.fields(), scope.fields())):
            if old is not None or new is None:
                filled.append(None)
                continue
            if id(via[i]) not in made:
                made[id(via[i])] = Source(origin, fallback, via[i])
            filled.append(made[id(via[i])])
        root.sources = _merge(root.sources, tuple(filled))
        root.scope = scope

    def default_from(self, domain: Domain, fallback: Domain, origin: Origin) -> None:
        """Default(domain, the scope of `fallback`), keeping why `fallback` had its fields."""
        root = self.find(fallback)
        self.default(domain, root.scope, origin, root.sources)

    def roots(self) -> list[Domain]:
        return [d for d in self.domains if d.parent is d]


def sources_of(scope: SEScopeAttr, source: Source) -> Sources:
    """`source` for every field `scope` constrains."""
    return tuple(None if value is None else source for value in scope.fields())


def _merge(first: Sources, second: Sources) -> Sources:
    """Field by field the first side's source, else the second's (Join keeps the first)."""
    if second is NO_SOURCES:
        return first
    if first is NO_SOURCES:
        return second
    return tuple(a if a is not None else b for a, b in zip(first, second))


def _join(a: SEScopeAttr, b: SEScopeAttr) -> SEScopeAttr | None:
    """SEScope Join, skipping the attribute construction in the common trivial cases."""
    if b is UNCONSTRAINED or a == b:
        return a
    if a is UNCONSTRAINED:
        return b
    return a.join(b)
