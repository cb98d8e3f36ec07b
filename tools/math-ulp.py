#!/usr/bin/env python3
"""Measures the f64 math library's sweeps against 60-digit references (mpmath).

    COOPGRAPH_MATH_DUMP=/tmp/sweeps cargo test --all-features --test all -- math64::f64_functions_within
    python3 tools/math-ulp.py /tmp/sweeps

Each file NAME.txt holds one line per argument: the arguments' and the result's bits in
hexadecimal. The error of a result is |got - exact| in ulps of the exact value (the ulp of
the binade of the exact value, 2^-1074 below the normal range); NaN must meet NaN, an
infinity must be exact. Prints each function's largest error and where.
"""

import math
import struct
import sys
from pathlib import Path

import mpmath as mp

mp.mp.dps = 60


def f64(bits):
    return struct.unpack("<d", struct.pack("<Q", int(bits, 16)))[0]


def pow_ref(x, y):
    if y == 0 or x == 1:
        return mp.mpf(1)
    if x == 0:
        odd = abs(y) < 2**53 and y == math.floor(y) and int(y) % 2 == 1
        sign = -1 if (odd and math.copysign(1, x) < 0) else 1
        return mp.mpf(0) * sign if y > 0 else mp.inf * sign
    if x < 0:
        if y != math.floor(y):
            return mp.nan
        v = mp.power(-mp.mpf(x), y)
        return -v if (abs(y) < 2**53 and int(y) % 2 == 1) else v
    return mp.power(mp.mpf(x), y)


UNARY = {
    "exp": mp.exp,
    "exp2": lambda x: mp.power(2, x),
    "exp10": lambda x: mp.power(10, x),
    "exp_m1": mp.expm1,
    "ln": mp.log,
    "log2": lambda x: mp.log(x, 2),
    "log10": mp.log10,
    "ln_1p": mp.log1p,
    "sin": mp.sin,
    "cos": mp.cos,
    "tan": mp.tan,
    "asin": mp.asin,
    "acos": mp.acos,
    "atan": mp.atan,
    "sinh": mp.sinh,
    "cosh": mp.cosh,
    "tanh": mp.tanh,
    "cbrt": lambda x: mp.sign(x) * mp.cbrt(abs(x)),
    "erf": mp.erf,
    # Past 40, erfc is below 2^-2300: 0 to within any ulp.
    "erfc": lambda x: mp.mpf(0) if x > 40 else mp.erfc(x),
    "rsqrt": lambda x: mp.inf if x == 0 else 1 / mp.sqrt(x),
}
BINARY = {
    "pow": pow_ref,
    # The exponent converted as PTX's cvt.rzi.s32 does: truncated, saturated.
    "powi": lambda x, n: pow_ref(x, float(max(min(int(n), 2**31 - 1), -(2**31)))),
    "atan2": lambda y, x: mp.atan2(y, x),
    "hypot": lambda x, y: mp.sqrt(mp.mpf(x) ** 2 + mp.mpf(y) ** 2),
}


def ulps(got, exact):
    """The error of `got` in ulps of `exact` (None: skip)."""
    if exact is None or (isinstance(exact, mp.mpf) and mp.isnan(exact)):
        return 0.0 if math.isnan(got) else math.inf
    if math.isnan(got):
        return math.inf
    if mp.isinf(exact):
        return 0.0 if got == exact else math.inf
    # Past the largest double by more than half an ulp of it, the result is inf.
    limit = mp.mpf(2) ** 1024 * (1 - mp.mpf(2) ** -54)
    if abs(exact) >= limit:
        return 0.0 if math.isinf(got) and (got > 0) == (exact > 0) else math.inf
    if math.isinf(got):
        return math.inf
    a = abs(exact)
    e = max(int(mp.floor(mp.log(a, 2))) if a != 0 else -1074, -1022)
    # mp.log may land one binade off at an exact power of 2.
    if a != 0 and mp.mpf(2) ** e > a:
        e -= 1
    if a != 0 and mp.mpf(2) ** (e + 1) <= a:
        e += 1
    e = max(e, -1022)
    ulp = mp.mpf(2) ** (e - 52)
    return float(abs(mp.mpf(got) - exact) / ulp)


def finite(v):
    return not (math.isnan(v) or math.isinf(v))


def main(folder):
    for path in sorted(Path(folder).glob("*.txt")):
        name = path.stem
        worst, at, n = 0.0, None, 0
        for line in path.read_text().split("\n"):
            if not line:
                continue
            vals = [f64(b) for b in line.split()]
            args, got = vals[:-1], vals[-1]
            zero = any(a == 0 for a in args) and name in ("rsqrt", "atan2", "pow", "powi")
            if not all(finite(a) for a in args) or zero:
                continue  # special values are checked exactly by the tests
            try:
                if name in UNARY:
                    exact = UNARY[name](mp.mpf(args[0]))
                else:
                    exact = BINARY[name](*args)
                if isinstance(exact, mp.mpc):
                    exact = mp.nan
            except (ValueError, ZeroDivisionError):
                exact = mp.nan
            e = ulps(got, exact)
            n += 1
            if e > worst:
                worst, at = e, args
        print(f"{name:8} {worst:7.3f} ulp  ({n} finite arguments; worst at {at})")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
