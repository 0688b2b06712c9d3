"""Compares two `kiln-run --print` outputs: the same fields and shapes,
every value equal, except floats of an `f32` field, which may be up to ULPS
units in the last place apart. Prints `N differ by up to U ulps` on success;
exits 1 naming the first value too far apart.

Usage: python3 within-ulps.py WANT GOT ULPS"""
import re
import struct
import sys


def values(line):
    head, _, body = line.partition(" = ")
    return head, re.findall(r"[^\[\],\s]+", body)


def f32_ordinal(text):
    bits = int(text, 16) if text.startswith("0x") else struct.unpack("<I", struct.pack("<f", float(text)))[0]
    return bits if bits < 0x80000000 else 0x80000000 - bits


def main():
    want_path, got_path, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
    want, got = open(want_path).read().splitlines(), open(got_path).read().splitlines()
    if len(want) != len(got):
        sys.exit(f"{len(want)} fields against {len(got)}")
    differ, worst = 0, 0
    for w, g in zip(want, got):
        (wh, wv), (gh, gv) = values(w), values(g)
        if wh != gh or len(wv) != len(gv):
            sys.exit(f"{wh!r} against {gh!r}")
        for k, (a, b) in enumerate(zip(wv, gv)):
            if a == b:
                continue
            if ": f32" not in wh or "nan" in (a, b):
                sys.exit(f"{wh} [{k}]: {a} against {b}")
            d = abs(f32_ordinal(a) - f32_ordinal(b))
            if d > limit:
                sys.exit(f"{wh} [{k}]: {a} against {b}, {d} ulps apart")
            differ, worst = differ + 1, max(worst, d)
    print(f"{differ} differ by up to {worst} ulps")


main()
