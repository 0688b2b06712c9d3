#!/usr/bin/env python3
"""Writes K kernels, each a loop calling the head of one shared chain of L
functions (f0 -> f1 -> ... -> f{L-1}): the input of the "functions compiled
once" benchmark and tests (docs/performance.md).
gen-shared-chain.py K L > F.kir"""
import sys

k = int(sys.argv[1])
n = int(sys.argv[2])
out = ["field @out : i32[%d]" % k]
for i in range(n):
    if i == n - 1:
        out.append("func @f%d(%%x: i32) -> i32 {\n  ret %%x\n}" % i)
    else:
        out.append("func @f%d(%%x: i32) -> i32 {\n  %%r = call @f%d(%%x)\n  ret %%r\n}" % (i, i + 1))
for j in range(k):
    out.append(
        "kernel @k%d() {\n  %%j = const %d : i32\n  %%v = call @f0(%%j)\n  store @out[%%j], %%v\n}" % (j, j))
print("\n\n".join(out))
