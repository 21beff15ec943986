"""JavaScript's ``Math.exp`` and ``Math.log`` bit for bit: V8 computes them with fdlibm's algorithms, which differ
from the C library's in the last bit now and then, so promptfoo's BLEU (``bp * Math.exp(sum w * Math.log p)``)
is reproduced exactly only with these (ports of fdlibm's e_exp.c and e_log.c)."""

from __future__ import annotations

import math
import struct


def _words(x: float) -> tuple[int, int]:
    bits = struct.unpack("<Q", struct.pack("<d", x))[0]
    return bits >> 32, bits & 0xFFFFFFFF


def _from_words(hi: int, lo: int) -> float:
    return float(struct.unpack("<d", struct.pack("<Q", ((hi & 0xFFFFFFFF) << 32) | (lo & 0xFFFFFFFF)))[0])


def _signed(hi: int) -> int:
    return hi - (1 << 32) if hi & 0x80000000 else hi


_LN2_HI = (6.93147180369123816490e-01, -6.93147180369123816490e-01)
_LN2_LO = (1.90821492927058770002e-10, -1.90821492927058770002e-10)
_P1, _P2, _P3 = 1.66666666666666019037e-01, -2.77777777770155933842e-03, 6.61375632143793436117e-05
_P4, _P5 = -1.65339022054652515390e-06, 4.13813679705723846039e-08


def js_exp(x: float) -> float:
    """fdlibm's ``__ieee754_exp`` (V8's ``base::ieee754::exp``)."""
    if x == 1.0:
        return math.e  # V8 answers e itself here
    hx, lx = _words(x)
    xsb = (hx >> 31) & 1
    hx &= 0x7FFFFFFF
    if hx >= 0x40862E42:
        if hx >= 0x7FF00000:
            if ((hx & 0xFFFFF) | lx) != 0:
                return x + x
            return x if xsb == 0 else 0.0
        if x > 7.09782712893383973096e02:
            return math.inf
        if x < -7.45133219101941108420e02:
            return 0.0
    k = 0
    hi = lo = 0.0
    if hx > 0x3FD62E42:
        if hx < 0x3FF0A2B2:
            hi, lo, k = x - _LN2_HI[xsb], _LN2_LO[xsb], 1 - xsb - xsb
        else:
            k = int(1.44269504088896338700e00 * x + (0.5, -0.5)[xsb])
            hi = x - k * _LN2_HI[0]
            lo = k * _LN2_LO[0]
        x = hi - lo
    elif hx < 0x3E300000:
        return 1.0 + x
    t = x * x
    c = x - t * (_P1 + t * (_P2 + t * (_P3 + t * (_P4 + t * _P5))))
    if k == 0:
        return 1.0 - ((x * c) / (c - 2.0) - x)
    y = 1.0 - ((lo - (x * c) / (2.0 - c)) - hi)
    if k >= -1021:
        if k == 1024:
            return y * 2.0 * 8.98846567431158e307
        return y * _from_words(0x3FF00000 + (k << 20), 0)
    return y * _from_words(0x3FF00000 + ((k + 1000) << 20), 0) * 9.33263618503218878990e-302


_LG = (
    6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01, 2.222219843214978396e-01,
    1.818357216161805012e-01, 1.531383769920937332e-01, 1.479819860511658591e-01,
)  # fmt: skip
_LN2_HI0, _LN2_LO0 = 6.93147180369123816490e-01, 1.90821492927058770002e-10


def js_log(x: float) -> float:
    """fdlibm's ``__ieee754_log`` (V8's ``base::ieee754::log``)."""
    hx, lx = _words(x)
    hx = _signed(hx)
    k = 0
    if hx < 0x00100000:
        if ((hx & 0x7FFFFFFF) | lx) == 0:
            return -math.inf
        if hx < 0:
            return math.nan
        k -= 54
        x *= 1.80143985094819840000e16
        hx = _signed(_words(x)[0])
    if hx >= 0x7FF00000:
        return x + x
    k += (hx >> 20) - 1023
    hx &= 0x000FFFFF
    i = (hx + 0x95F64) & 0x100000
    x = _from_words(hx | (i ^ 0x3FF00000), _words(x)[1])
    k += i >> 20
    f = x - 1.0
    dk = float(k)
    if (0x000FFFFF & (2 + hx)) < 3:
        if f == 0.0:
            return 0.0 if k == 0 else dk * _LN2_HI0 + dk * _LN2_LO0
        r = f * f * (0.5 - 0.33333333333333333 * f)
        return f - r if k == 0 else dk * _LN2_HI0 - ((r - dk * _LN2_LO0) - f)
    s = f / (2.0 + f)
    z = s * s
    i = hx - 0x6147A
    w = z * z
    j = 0x6B851 - hx
    t1 = w * (_LG[1] + w * (_LG[3] + w * _LG[5]))
    t2 = z * (_LG[0] + w * (_LG[2] + w * (_LG[4] + w * _LG[6])))
    i |= j
    r = t2 + t1
    if i > 0:
        hfsq = 0.5 * f * f
        if k == 0:
            return f - (hfsq - s * (hfsq + r))
        return dk * _LN2_HI0 - ((hfsq - (s * (hfsq + r) + dk * _LN2_LO0)) - f)
    if k == 0:
        return f - s * (f - r)
    return dk * _LN2_HI0 - ((s * (f - r) - dk * _LN2_LO0) - f)
