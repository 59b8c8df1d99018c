#!/usr/bin/env python3
"""scripts/fit_math.py: derives the polynomial coefficients of codegen/cpu/llvm_math.c.

A small weighted Remez exchange in mpmath: it finds the polynomial P of degree n that
minimises max |W(t) * (F(t) - P(t))| on [a, b]. Each kernel below states which F and W
it uses (F is the function with its fixed leading terms taken out, W turns the error of P
into the relative error of the final function), so the fit minimises the error that the
C code actually makes. Usage: `python3 scripts/fit_math.py [NAME[:DEGREE]...]`; it prints
each kernel's coefficients (C hex floats, rounded to float or double) and its error.
Needs mpmath (`pip install mpmath`).
"""
import sys

import mpmath as mp

mp.mp.dps = 60
TINY = mp.mpf(10) ** -25


def polyval(c, t):
    r = mp.mpf(0)
    for k in reversed(range(len(c))):
        r = r * t + c[k]
    return r


def remez(F, W, a, b, n, iters=40, grid=4000):
    """Coefficients c[0..n] of the weighted minimax polynomial, and the levelled error."""
    a, b = mp.mpf(a), mp.mpf(b)
    if a == 0:
        a = b * mp.mpf(10) ** -8  # W(0) = 0 there: the point carries no error anyway
    N = n + 2
    mid, half = (a + b) / 2, (b - a) / 2
    xs = [mid - half * mp.cos(mp.pi * i / (N - 1)) for i in range(N)]
    # a reference point where W vanishes (the middle of a symmetric interval) moves aside
    xs = [x + (b - a) / 1000 if abs(W(x)) < TINY else x for x in xs]
    G = [mid - half * mp.cos(mp.pi * i / (grid - 1)) for i in range(grid)]
    FG = [F(t) for t in G]
    WG = [W(t) for t in G]
    best = None
    for _ in range(iters):
        A = mp.matrix(N, N)
        rhs = mp.matrix(N, 1)
        for i, x in enumerate(xs):
            p = mp.mpf(1)
            for k in range(n + 1):
                A[i, k] = p
                p *= x
            A[i, n + 1] = (-1) ** i / W(x)
            rhs[i] = F(x)
        sol = mp.lu_solve(A, rhs)
        c = [sol[k] for k in range(n + 1)]
        E = abs(sol[n + 1])
        err = [WG[j] * (FG[j] - polyval(c, G[j])) for j in range(grid)]
        emax = max(abs(e) for e in err)
        best = (c, emax)
        if emax <= E * (1 + mp.mpf(10) ** -6):
            break
        # the extremum of each run of one sign, then drop the smallest until N remain
        ext = []
        j = 0
        while j < grid:
            s = err[j] >= 0
            k = j
            m = j
            while k < grid and (err[k] >= 0) == s:
                if abs(err[k]) > abs(err[m]):
                    m = k
                k += 1
            ext.append(m)
            j = k
        while len(ext) > N:
            vals = [abs(err[e]) for e in ext]
            i = vals.index(min(vals))
            if i == 0 or i == len(ext) - 1:
                ext.pop(i)
            else:
                # removing an inner point leaves two of one sign: keep the larger
                ext.pop(i)
                lo, hi = ext[i - 1], ext[i]
                ext.pop(i if abs(err[lo]) >= abs(err[hi]) else i - 1)
        if len(ext) < N:
            break
        xs = [G[e] for e in ext]
    return best


def f32hex(v):
    import struct
    f = struct.unpack("<f", struct.pack("<f", float(v)))[0]
    mant, _, exp = float.hex(f).partition("p")
    return mant.rstrip("0").rstrip(".") + "p" + exp + "f", f


def f64hex(v):
    return float.hex(float(v)), float(v)


def show(name, c, e, kind):
    print(f"== {name}: max weighted error {mp.nstr(e, 4)} (2^{mp.nstr(mp.log(e, 2), 4)})")
    for k, v in enumerate(c):
        h = f32hex(v)[0] if kind == "f" else f64hex(v)[0]
        print(f"    c{k} = {h}  /* {mp.nstr(v, 17)} */")


def safe(fn, lim):
    """fn(t) but its limit `lim` at t ~ 0, where the removable singularity would cancel."""
    return lambda t: lim if abs(t) < TINY else fn(t)


LN2 = mp.log(2)
# expm1(r) = r + r^2 * P(r); W makes the error relative to expm1(r) (stricter than exp's)
EXPM1_F = safe(lambda r: (mp.expm1(r) - r) / r**2, mp.mpf(1) / 2)
EXPM1_W = safe(lambda r: r**2 / mp.expm1(r), mp.mpf(0))
# e^r = 1 + r + r^2 * P(r), error relative to e^r (the --fast-math exp, which has no expm1)
EXP_W = safe(lambda r: r**2 / mp.exp(r), mp.mpf(0))
# 2^r = 1 + r * P(r), error relative to 2^r
EXP2_F = safe(lambda r: (mp.power(2, r) - 1) / r, LN2)
EXP2_W = lambda r: abs(r) / mp.power(2, r)
# log1p(f) = f - f^2/2 + f^3 * P(f), error relative to log1p(f)
LOG_F = safe(lambda f: (mp.log1p(f) - f + f**2 / 2) / f**3, mp.mpf(1) / 3)
LOG_W = safe(lambda f: abs(f**3 / mp.log1p(f)), mp.mpf(0))
# log(x) for x = (1+s)/(1-s): 2s + s^3 * P(s^2), error relative to log(x); t = s^2
LOGS_F = safe(lambda t: (mp.log((1 + mp.sqrt(t)) / (1 - mp.sqrt(t))) - 2 * mp.sqrt(t)) /
              mp.sqrt(t)**3, mp.mpf(2) / 3)
LOGS_W = safe(lambda t: abs(mp.sqrt(t)**3 / mp.log((1 + mp.sqrt(t)) / (1 - mp.sqrt(t)))),
              mp.mpf(0))
# log2((1+s)/(1-s)) = s * P(s^2), relative; t = s^2
LOG2S_F = safe(lambda t: mp.log((1 + mp.sqrt(t)) / (1 - mp.sqrt(t)), 2) / mp.sqrt(t), 2 / LN2)
LOG2S_W = lambda t: mp.mpf(1) / LOG2S_F(t)
# odd functions g(x) = x + x^3 * P(x^2), error relative to g; t = x^2
def odd(g, c3):
    Fn = safe(lambda t: (g(mp.sqrt(t)) - mp.sqrt(t)) / mp.sqrt(t)**3, c3)
    Wn = safe(lambda t: abs(mp.sqrt(t)**3 / g(mp.sqrt(t))), mp.mpf(0))
    return Fn, Wn
# cos(x) = 1 - x^2/2 + x^4 * P(x^2), relative; t = x^2
COS_F = safe(lambda t: (mp.cos(mp.sqrt(t)) - 1 + t / 2) / t**2, mp.mpf(1) / 24)
COS_W = lambda t: t**2 / mp.cos(mp.sqrt(t))
# erf(x) = x * P(x^2) near 0, relative; t = x^2
ERF0_F = safe(lambda t: mp.erf(mp.sqrt(t)) / mp.sqrt(t), 2 / mp.sqrt(mp.pi))
ERF0_W = lambda t: mp.mpf(1) / ERF0_F(t)
# erf(x) = x + x * P(x^2): P(0) = 2/sqrt(pi) - 1 keeps all its bits when rounded
ERF1_F = lambda t: ERF0_F(t) - 1
# erfc(x) = exp(-x^2) * P(x - c), c the middle of the interval (a centred variable keeps
# the monomials well conditioned): the error counts relative to erf(x) = 1 - erfc(x)
# (plus a small constant weight, so that P stays a sane erfc where erf has rounded to 1)
def erfc_fw(c, floor):
    return (lambda t: mp.erfc(t + c) * mp.exp((t + c)**2),
            lambda t: mp.exp(-(t + c)**2) / mp.erf(t + c) + floor)
ERFCF_C = mp.mpf("2.5")
ERFC_C = mp.mpf("3.5")
SIN_F, SIN_W = odd(mp.sin, -mp.mpf(1) / 6)
SINH_F, SINH_W = odd(mp.sinh, mp.mpf(1) / 6)
ASIN_F, ASIN_W = odd(mp.asin, mp.mpf(1) / 6)
ATAN_F, ATAN_W = odd(mp.atan, -mp.mpf(1) / 3)
PI = mp.pi

KERNELS = {
    # name: (F, W, a, b, degree of P, 'f' float | 'd' double coefficients)
    "expm1f": (EXPM1_F, EXPM1_W, -LN2 / 2, LN2 / 2, 5, "f"),
    "exp2f": (EXP2_F, EXP2_W, -0.5, 0.5, 5, "f"),
    "logf": (LOG_F, LOG_W, mp.sqrt(0.5) - 1, mp.sqrt(2) - 1, 7, "f"),
    "sinf": (SIN_F, SIN_W, 0, (PI / 4)**2, 2, "f"),
    "cosf": (COS_F, COS_W, 0, (PI / 4)**2, 2, "f"),
    "asinf": (ASIN_F, ASIN_W, 0, 0.25, 4, "f"),
    "atanf": (ATAN_F, ATAN_W, 0, 1, 8, "f"),
    "erf0f": (ERF1_F, ERF0_W, 0, 1, 6, "f"),
    "erfcf": (*erfc_fw(ERFCF_C, mp.mpf(2)**-16), 1 - ERFCF_C, 4 - ERFCF_C, 8, "f"),
    "sinhf": (SINH_F, SINH_W, 0, 1, 3, "f"),
    # the --fast-math variants
    "expf_fast": (EXPM1_F, EXP_W, -LN2 / 2, LN2 / 2, 2, "f"),
    "exp2f_fast": (EXP2_F, EXP2_W, -0.5, 0.5, 3, "f"),
    "logf_fast": (LOG_F, LOG_W, mp.sqrt(0.5) - 1, mp.sqrt(2) - 1, 3, "f"),
    "expm1f_fast": (EXPM1_F, EXPM1_W, -LN2 / 2, LN2 / 2, 3, "f"),
    "erf0f_fast": (ERF0_F, ERF0_W, 0, 1, 3, "f"),
    "erfcf_fast": (*erfc_fw(ERFCF_C, mp.mpf(2)**-16), 1 - ERFCF_C, 4 - ERFCF_C, 4, "f"),
    "sinf_fast": (SIN_F, SIN_W, 0, (PI / 4)**2, 1, "f"),
    "cosf_fast": (COS_F, COS_W, 0, (PI / 4)**2, 1, "f"),
    # double precision kernels
    "expm1": (EXPM1_F, EXPM1_W, -LN2 / 2, LN2 / 2, 10, "d"),
    "logs": (LOGS_F, LOGS_W, 0, ((mp.sqrt(2) - 1) / (mp.sqrt(2) + 1))**2, 6, "d"),
    "erf0": (ERF1_F, ERF0_W, 0, 1, 11, "d"),
    "erfc": (*erfc_fw(ERFC_C, mp.mpf(2)**-40), 1 - ERFC_C, 6 - ERFC_C, 20, "d"),
    # double kernels of the float pow
    "log2s": (LOG2S_F, LOG2S_W, 0, ((mp.sqrt(2) - 1) / (mp.sqrt(2) + 1))**2, 5, "d"),
    "exp2d": (EXP2_F, EXP2_W, -0.5, 0.5, 6, "d"),
}


def main(argv):
    # NAME or NAME:DEGREE (to try another degree)
    for arg in argv[1:] or list(KERNELS):
        name, _, deg = arg.partition(":")
        F, W, a, b, n, kind = KERNELS[name]
        c, e = remez(F, W, a, b, int(deg) if deg else n)
        show(name, c, e, kind)


if __name__ == "__main__":
    main(sys.argv)
