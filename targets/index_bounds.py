"""
index_bounds: upper bounds of index values and of loop trip counts in a lowered kernel.

The C target asks how much work a loop nest does (`targets/c.py: estimated_work`) to decide
whether it is worth threads. A loop whose bounds are not constants, like packed_matmul's
k-block `for (k = k0; k < min(k0 + 256, K); k++)`, still runs a bounded number of times;
bounding it needs the difference of its bounds, not each bound alone (`min(k0 + 256, K) -
k0` is at most 256 whatever k0 is, where intervals alone would give K).

A bound is sought for a linear form over index values (`Form`: coefficients and a constant):

1. expand: a term whose value is an `arith.constant`, `addi`, `subi`, a `muli` by a constant
   or a min/max (`select(cmpi(slt|sle|sgt|sge, a, b), a, b)` either way round; signed
   only: `ult` on a negative index is no min) is replaced by its operands, so that equal
   values cancel (`k0 + 256 - k0` is 256). A min or max splits the form in two, one per
   operand: the bound is the smaller of the two where the form's value is at most either
   (a min with a positive coefficient, a max with a negative one), else the larger. A
   `divsi` of a value x >= 0 by a positive constant c is x / c - (x mod c) / c, so that
   quotients of near values cancel too (`(k + 47) / 30 - k / 30` is at most (47 + 29) /
   30, so 2: coefficients are fractions, a bound is rounded down at the end); `remsi` of
   such an x is the same remainder term;
2. bound: the terms left (atoms) are bounded one by one by their intervals: a loop's
   induction variable lies in [lower(lb), upper(ub) - 1] (steps are positive), a remainder
   (x mod c) in [0, c - 1], a `divsi` of a value that may be negative follows from its
   dividend's interval. An atom without an interval (a function argument, any other op)
   leaves the form unbounded (`None`).

Forms that split into more than MAX_FORMS alternatives are left unbounded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from math import floor

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

# The alternatives one bound may split into (each min or max doubles them).
MAX_FORMS = 64

MIN_PREDICATES = ("slt", "sle")
MAX_PREDICATES = ("sgt", "sge")


@dataclass(frozen=True)
class Remainder:
    """`dividend mod divisor` of a dividend >= 0 (a term of its own: its quotient's and its
    `remsi`'s)."""

    dividend: SSAValue
    divisor: int


Term = SSAValue | Remainder


@dataclass(frozen=True)
class Form:
    """`sum(coefficient * term) + constant` over index values."""

    terms: tuple[tuple[Term, Fraction], ...] = ()
    constant: Fraction = Fraction(0)

    @staticmethod
    def of(term: Term, coefficient: Fraction | int = 1) -> Form:
        return Form(((term, Fraction(coefficient)),))

    def plus(self, other: Form, scale: Fraction | int = 1) -> Form:
        """`self + scale * other`, equal terms merged and zero terms dropped."""
        merged = dict(self.terms)
        for term, coefficient in other.terms:
            merged[term] = merged.get(term, Fraction(0)) + scale * coefficient
        terms = tuple((t, c) for t, c in merged.items() if c != 0)
        return Form(terms, self.constant + scale * other.constant)

    def without(self, term: Term) -> tuple[Form, Fraction]:
        """This form without `term`, and that term's coefficient."""
        coefficient = dict(self.terms)[term]
        return Form(tuple((t, c) for t, c in self.terms if t != term), self.constant), coefficient


@dataclass
class IndexBounds:
    """Upper and lower bounds of index forms, atoms' intervals cached."""

    intervals: dict[Term, tuple[int | None, int | None]] = field(
        default_factory=dict[Term, tuple[int | None, int | None]]
    )

    def upper(self, form: Form) -> int | None:
        """A number the form's (integer) value never exceeds, or None when there is none."""
        bound = self._expand(form, [MAX_FORMS])
        return None if bound is None else floor(bound)

    def lower(self, form: Form) -> int | None:
        """A number the form's value is never below, or None."""
        bound = self.upper(Form().plus(form, -1))
        return None if bound is None else -bound

    def trip_count(self, lb: SSAValue, ub: SSAValue, step: SSAValue) -> int | None:
        """At most how many times `for (i = lb; i < ub; i += step)` runs, or None."""
        stride = constant_of(step)
        span = self.upper(Form.of(ub).plus(Form.of(lb), -1))
        if stride is None or stride <= 0 or span is None:
            return None
        return max(0, -(-span // stride))

    # --- Phase 1: expand ---------------------------------------------------------------------

    def _expand(self, form: Form, budget: list[int]) -> Fraction | None:
        """The bound of `form` with every term expanded; `budget` counts the splits left."""
        for term, _ in form.terms:
            split = self._split(term)
            if split is None:
                continue
            rest, coefficient = form.without(term)
            if isinstance(split, Form):
                return self._expand(rest.plus(split, coefficient), budget)
            return self._either(rest, coefficient, split, budget)
        return self._bound(form)

    def _either(self, rest: Form, coefficient: Fraction, split: MinMax, budget: list[int]) -> Fraction | None:
        """The bound of `rest + coefficient * min/max(a, b)`: of the smaller or the larger of
        the two forms with a or with b in its place."""
        budget[0] -= 1
        if budget[0] < 0:
            return None
        bounds = [self._expand(rest.plus(Form.of(v), coefficient), budget) for v in split.values]
        if split.is_min == (coefficient > 0):  # the form is at most either: the smaller bound
            known = [b for b in bounds if b is not None]
            return min(known) if known else None
        return None if None in bounds else max(b for b in bounds if b is not None)

    def _split(self, term: Term) -> Form | MinMax | None:
        """What a term expands to: a form of its operands, a min/max, or None (an atom)."""
        if isinstance(term, Remainder) or not isinstance(term.owner, Operation):
            return None
        op = term.owner
        constant = constant_of(term)
        if constant is not None:
            return Form((), Fraction(constant))
        if isinstance(op, arith.AddiOp):
            return Form.of(op.lhs).plus(Form.of(op.rhs))
        if isinstance(op, arith.SubiOp):
            return Form.of(op.lhs).plus(Form.of(op.rhs), -1)
        if isinstance(op, arith.MuliOp):
            return _scaled(op.lhs, op.rhs)
        if isinstance(op, arith.SelectOp):
            return _min_max(op)
        if isinstance(op, arith.DivSIOp | arith.RemSIOp):
            return self._division(op)
        return None

    def _division(self, op: arith.DivSIOp | arith.RemSIOp) -> Form | None:
        """`x / c` as `x / c - (x mod c) / c` and `x % c` as `x mod c`, for x >= 0 and c > 0."""
        divisor = constant_of(op.rhs)
        low = self.lower(Form.of(op.lhs))
        if divisor is None or divisor <= 0 or low is None or low < 0:
            return None
        remainder = Form.of(Remainder(op.lhs, divisor))
        if isinstance(op, arith.RemSIOp):
            return remainder
        return Form.of(op.lhs, Fraction(1, divisor)).plus(remainder, Fraction(-1, divisor))

    # --- Phase 2: bound the atoms ------------------------------------------------------------

    def _bound(self, form: Form) -> Fraction | None:
        total = form.constant
        for term, coefficient in form.terms:
            low, high = self.interval(term)
            end = high if coefficient > 0 else low
            if end is None:
                return None
            total += coefficient * end
        return total

    def interval(self, term: Term) -> tuple[int | None, int | None]:
        """The interval of an atom: a loop's induction variable, a remainder, a division by a
        positive constant; (None, None) for anything else."""
        if term not in self.intervals:
            self.intervals[term] = (None, None)  # a cycle through iter_args stays unbounded
            self.intervals[term] = self._interval(term)
        return self.intervals[term]

    def _interval(self, term: Term) -> tuple[int | None, int | None]:
        if isinstance(term, Remainder):
            high = self.upper(Form.of(term.dividend))
            return (0, term.divisor - 1 if high is None else min(high, term.divisor - 1))
        if isinstance(term, BlockArgument):
            return self._induction_interval(term)
        op = term.owner
        if not isinstance(op, arith.DivSIOp | arith.RemSIOp):
            return (None, None)
        divisor = constant_of(op.rhs)
        if divisor is None or divisor <= 0:
            return (None, None)
        if isinstance(op, arith.RemSIOp):  # of a dividend that may be negative
            return (-(divisor - 1), divisor - 1)
        low, high = self.lower(Form.of(op.lhs)), self.upper(Form.of(op.lhs))
        return (
            None if low is None else _trunc_div(low, divisor),
            None if high is None else _trunc_div(high, divisor),
        )

    def _induction_interval(self, arg: BlockArgument) -> tuple[int | None, int | None]:
        bounds = loop_bounds(arg.block, arg.index)
        if bounds is None:
            return (None, None)
        lb, ub = bounds
        high = self.upper(Form.of(ub))
        return (self.lower(Form.of(lb)), None if high is None else high - 1)


@dataclass(frozen=True)
class MinMax:
    """`values[0]` and `values[1]` of which a select picks the smaller (`is_min`) or larger."""

    values: tuple[SSAValue, SSAValue]
    is_min: bool


def _scaled(a: SSAValue, b: SSAValue) -> Form | None:
    for value, factor in ((a, constant_of(b)), (b, constant_of(a))):
        if factor is not None:
            return Form.of(value, factor)
    return None


def _min_max(select: arith.SelectOp) -> MinMax | None:
    compare = select.cond.owner
    if not isinstance(compare, arith.CmpiOp):
        return None
    predicate = arith.CMPI_COMPARISON_OPERATIONS[compare.predicate.value.data]
    a, b = compare.lhs, compare.rhs
    picks_a = (select.lhs, select.rhs) == (a, b)
    if not picks_a and (select.lhs, select.rhs) != (b, a):
        return None
    if predicate not in MIN_PREDICATES + MAX_PREDICATES:
        return None
    return MinMax((a, b), is_min=(predicate in MIN_PREDICATES) == picks_a)


def loop_bounds(block: Block, index: int) -> tuple[SSAValue, SSAValue] | None:
    """The lower and upper bound of the induction variable `index` of a loop body `block`
    (an scf.for's first argument, an scf.parallel's ivs), or None for other arguments."""
    loop = block.parent_op()
    if isinstance(loop, scf.ForOp) and index == 0:
        return loop.lb, loop.ub
    if isinstance(loop, scf.ParallelOp) and index < len(loop.lowerBound):
        return loop.lowerBound[index], loop.upperBound[index]
    return None


def constant_of(value: SSAValue) -> int | None:
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def _trunc_div(a: int, b: int) -> int:
    """`a / b` rounded toward zero, as `arith.divsi` does."""
    quotient = abs(a) // b
    return quotient if a >= 0 else -quotient
