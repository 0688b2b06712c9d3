#!/usr/bin/env python3
"""Writes a KIR module of N functions in call chains of L (default 500), one
range_for task calling the head of every chain: the input of the kiln-key
call-chain benchmark (docs/performance.md).  gen-call-chains.py N [L] > F.kir"""
import sys
# N functions in chains of L calls each; one task calls the head of every chain.
n=int(sys.argv[1]); L=int(sys.argv[2]) if len(sys.argv)>2 else 500
out=["field @out : i32[1]"]
for i in range(n):
    if (i+1)%L==0 or i==n-1:
        out.append("func @f%d(%%x: i32) -> i32 {\n  ret %%x\n}"%i)
    else:
        out.append("func @f%d(%%x: i32) -> i32 {\n  %%r = call @f%d(%%x)\n  ret %%r\n}"%(i,i+1))
calls="".join("    %%v%d = call @f%d(%%i)\n"%(h,h) for h in range(0,n,L))
out.append("kernel @main() {\n  task @t range_for %i in 0 .. 4 {\n"+calls+"  }\n}")
print("\n\n".join(out))
