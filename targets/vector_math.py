"""
Maths functions the kernels define themselves: branch-free, so that a compiler vectorises a
loop calling them (PoCL's work-group vectoriser) where the platform's own stay scalar.

The sources spell what C and OpenCL C write differently (bit casts, `rint`, `fabs`,
`copysign`, the function qualifier) as `XR_*` macros and `xr_as_*`, which a language's
prelude defines; only OpenCL's exists so far (the C target needs none, see below). A function is printed
into a translation unit only when a kernel there calls it, after the ones it needs and inside
an include guard, because the runtime builds several units as one (C kernels into one shared
library, OpenCL kernels into one program).

Who uses which (speed in bench/vector_math.py, accuracy in test/unit/test_vector_math.py):
- OpenCL C: `xr_tanhf`, `xr_logf`, `xr_erff` and `xr_powf`. PoCL 3.1's built-ins of log,
  erf and pow stay scalar (25, 78 and 280 ns per element against 0.8, 1.2 and 3.8 ns here),
  and its tanh is slow (the tanh chain of bench/vector_math.py: 7.1 ms against 4.2 with
  `xr_tanhf`, which calls PoCL's `exp`); its `exp`, `sqrt` and `rsqrt` vectorise and are
  kept. `xr_expf` serves `xr_erff`.
- C: none. glibc's libmvec has vector variants of all of them (`targets/c.py`); a branch-free
  tanh of our own was slower in a loop (0.99 against 0.58 ns per element) and did not help a
  matmul block's straight-line epilogue either, which no vectoriser turns into vector calls.

NaN in gives NaN out; ±0, ±inf and subnormals follow C99's Annex F, as numpy does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Helper:
    name: str
    source: str  # the definition, in the shared dialect (XR_* spellings)
    needs: tuple[str, ...] = ()


OPENCL_PRELUDE = """\
#ifndef XR_PRELUDE
#define XR_PRELUDE
#define XR_FN static inline
#define XR_RINT rint
#define XR_FABS fabs
#define XR_COPYSIGN copysign
#define XR_EXP exp
#define xr_as_float as_float
#define xr_as_int as_int
#endif
"""

# exp(x) = 2^n e^r with n = rint(x / ln 2), r = x - n ln 2 in two parts (Cody and Waite), e^r
# by Cephes' expf polynomial; 2^n applied in two halves so that n = 128 (results near
# FLT_MAX) and n < -126 (subnormal results) round once, where they should. Overflow comes out
# as inf by itself; x is clamped only to keep n in range, and a NaN to keep (int)n defined.
EXP = Helper(
    "xr_expf",
    """\
XR_FN float xr_expf(float x) {
  float c = x > 88.8f ? 88.8f : x;
  c = c < -104.0f ? -104.0f : c;
  c = c == c ? c : 0.0f;
  float n = XR_RINT(c * 1.44269504088896341f);
  float r = c - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int k = (int)n;
  int k1 = k / 2;
  float y = p * xr_as_float((k1 + 127) << 23) * xr_as_float((k - k1 + 127) << 23);
  return x == x ? y : x;
}
""",
)

# tanh |x| = |x| + |x|^3 P(x^2) below 0.625 (Cephes' tanhf), else 1 - 2 / (e^2|x| + 1) with
# the platform's exp (PoCL's vectorises), the sign copied back (so -0 stays -0); a NaN takes
# the second form and stays NaN.
TANH = Helper(
    "xr_tanhf",
    """\
XR_FN float xr_tanhf(float x) {
  float a = XR_FABS(x);
  float z = a * a;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  float small = a + a * z * p;
  float large = 1.0f - 2.0f / (XR_EXP(a + a) + 1.0f);
  return XR_COPYSIGN(a < 0.625f ? small : large, x);
}
""",
)

# log x = log m + e ln 2 with x = m 2^e, m in [sqrt(1/2), sqrt(2)) (Cephes' logf polynomial);
# subnormals are scaled by 2^23 first. 0 gives -inf, negatives NaN, inf and NaN themselves.
LOG = Helper(
    "xr_logf",
    """\
XR_FN float xr_logf(float x) {
  int sub = x < 1.17549435e-38f;
  float s = sub ? x * 8388608.0f : x;
  int i = xr_as_int(s);
  int e = ((i >> 23) & 0xff) - 126 - (sub ? 23 : 0);
  float m = xr_as_float((i & 0x007fffff) | 0x3f000000);
  int low = m < 0.707106781186547524f;
  e = low ? e - 1 : e;
  m = low ? m + m - 1.0f : m - 1.0f;
  float z = m * m;
  float p = 7.0376836292e-2f;
  p = p * m - 1.1514610310e-1f;
  p = p * m + 1.1676998740e-1f;
  p = p * m - 1.2420140846e-1f;
  p = p * m + 1.4249322787e-1f;
  p = p * m - 1.6668057665e-1f;
  p = p * m + 2.0000714765e-1f;
  p = p * m - 2.4999993993e-1f;
  p = p * m + 3.3333331174e-1f;
  float f = (float)e;
  float y = m * z * p + f * -2.12194440e-4f - 0.5f * z;
  float r = (m + y) + f * 0.693359375f;
  r = x == 0.0f ? -INFINITY : r;
  r = x < 0.0f ? NAN : r;
  return x == x && x != INFINITY ? r : x;
}
""",
)

# erf |x| = |x| P(x^2) below 1; 1 - e^-x^2 R(|x| - 2.5) up to 3.92, 1 beyond (least-squares
# fits in float64 on Chebyshev nodes: bench-free numbers, see test/unit/test_vector_math.py
# for the error); the sign copied back.
ERF = Helper(
    "xr_erff",
    """\
XR_FN float xr_erff(float x) {
  float a = XR_FABS(x);
  float s = a * a;
  float p = 7.847259257687256e-05f;
  p = p * s - 8.008189033716917e-04f;
  p = p * s + 5.188099108636379e-03f;
  p = p * s - 2.6853691786527634e-02f;
  p = p * s + 1.128358244895935e-01f;
  p = p * s - 3.761262595653534e-01f;
  p = p * s + 1.1283791065216064f;
  float t = a - 2.5f;
  float q = 1.8360434523856384e-06f;
  q = q * t - 6.231158295122441e-06f;
  q = q * t + 1.3570739611168392e-05f;
  q = q * t - 5.424580012913793e-05f;
  q = q * t + 2.1426347666420043e-04f;
  q = q * t - 7.380740717053413e-04f;
  q = q * t + 2.4651256389915943e-03f;
  q = q * t - 7.999815046787262e-03f;
  q = q * t + 2.4938398972153664e-02f;
  q = q * t - 7.434754073619843e-02f;
  q = q * t + 2.1080635488033295e-01f;
  float large = a < 3.92f ? 1.0f - xr_expf(-s) * q : 1.0f;
  float r = a < 1.0f ? a * p : large;
  return XR_COPYSIGN(a == a ? r : a, x);
}
""",
    ("xr_expf",),
)

# pow(x, y) = 2^(y log2 |x|) in double (a float result then rounds once): ln |x| from the
# mantissa by the atanh series, e^t by its Taylor series after t = n ln 2 + r. The special
# cases of C99's pow (as numpy's) are selects at the end. Needs fp64 (cl_khr_fp64 on OpenCL).
POW = Helper(
    "xr_powf",
    """\
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
XR_FN float xr_powf(float x, float y) {
  float a = XR_FABS(x);
  int sub = a < 1.17549435e-38f;
  int i = xr_as_int(sub ? a * 8388608.0f : a);
  int e = ((i >> 23) & 0xff) - 127 - (sub ? 23 : 0);
  float mf = xr_as_float((i & 0x007fffff) | 0x3f800000);
  int high = mf > 1.41421356f;
  e = high ? e + 1 : e;
  double m = high ? 0.5 * (double)mf : (double)mf;
  double s = (m - 1.0) / (m + 1.0);
  double s2 = s * s;
  double l = 2.0 / 15.0;
  l = l * s2 + 2.0 / 13.0;
  l = l * s2 + 2.0 / 11.0;
  l = l * s2 + 2.0 / 9.0;
  l = l * s2 + 2.0 / 7.0;
  l = l * s2 + 2.0 / 5.0;
  l = l * s2 + 2.0 / 3.0;
  l = l * s2 + 2.0;
  double lg = l * s + (double)e * 0.6931471805599453;
  lg = a == 0.0f ? -INFINITY : lg;
  lg = a == INFINITY ? INFINITY : lg;
  double t = (double)y * lg;
  t = t == t ? t : 0.0;
  t = t > 100.0 ? 100.0 : t;
  t = t < -120.0 ? -120.0 : t;
  double n = rint(t * 1.4426950408889634);
  double r = t - n * 0.6931471805599453;
  double q = 1.0 / 479001600.0;
  q = q * r + 1.0 / 39916800.0;
  q = q * r + 1.0 / 3628800.0;
  q = q * r + 1.0 / 362880.0;
  q = q * r + 1.0 / 40320.0;
  q = q * r + 1.0 / 5040.0;
  q = q * r + 1.0 / 720.0;
  q = q * r + 1.0 / 120.0;
  q = q * r + 1.0 / 24.0;
  q = q * r + 1.0 / 6.0;
  q = q * r + 0.5;
  q = q * r * r + r + 1.0;
  float res = (float)(q * as_double((long)((int)n + 1023) << 52));
  float ay = XR_FABS(y);
  int integer = ay >= 16777216.0f || (ay < 16777216.0f && XR_RINT(y) == y);
  int odd = ay < 16777216.0f && integer && (((long)y) & 1);
  res = xr_as_int(x) < 0 && odd ? -res : res;
  res = x < 0.0f && x > -INFINITY && ay < INFINITY && !integer ? NAN : res;
  res = x != x || y != y ? NAN : res;
  return y == 0.0f || x == 1.0f ? 1.0f : res;
}
""",
)

HELPERS = {h.name: h for h in (EXP, TANH, LOG, ERF, POW)}


def helpers_for(text: str, available: tuple[str, ...]) -> list[Helper]:
    """The helpers `text` calls (of `available`), each after the ones it needs."""
    ordered: list[Helper] = []

    def add(name: str) -> None:
        helper = HELPERS[name]
        if helper in ordered:
            return
        for need in helper.needs:
            add(need)
        ordered.append(helper)

    for name in available:
        if re.search(rf"\b{name}\(", text):
            add(name)
    return ordered


def guarded(helper: Helper) -> str:
    guard = helper.name.upper()
    return f"#ifndef {guard}\n#define {guard}\n{helper.source}#endif\n"


def helper_text(text: str, prelude: str, available: tuple[str, ...]) -> str:
    """The prelude and the helper definitions a translation unit's kernels `text` need."""
    helpers = helpers_for(text, available)
    if not helpers:
        return ""
    return "".join([prelude, *map(guarded, helpers)])
