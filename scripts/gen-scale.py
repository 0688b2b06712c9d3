#!/usr/bin/env python3
"""Writes a KIR input that grows along one dimension, for
scripts/bench-scale.sh and the scaling tests (tests/scale.rs):

  gen-scale.py DIMENSION N > F.kir

statements  one kernel: one loop of N statements (a chain of adds)
loops       one kernel: N top-level loops (N range_for tasks after offload)
carries     one kernel: N loops, each reading the value the one before made
tasks       as loops; the benchmark offloads and splits it into 2N task
            modules (`kiln-opt --passes=offload,split-tasks`)
launches    a split stream: one serial task of N statements launched N times
kernels     N kernels of one loop each, all storing into one field
fieldloops  N fields and one kernel of N loops, each storing into its own
fields      N fields, one task storing into each
functions   N functions in one call chain of 64, called by one task
params      one loop summing N kernel parameters
depth       a call chain N deep
wide-depth  a call chain N deep of functions of 300 parameters
deadchain   a chain of N unused adds (dce removes them all)
nested      N stores inside loops nested 250 deep (the canonical text
            indents each of them 502 spaces)
errors      N statements each with a type error
"""
import sys

def loops(n, carry):
    out = ["field @out : i32[4]", "kernel @k() {"]
    for i in range(n):
        if carry and i > 0:
            out.append("  %%c%d = add %%c%d, %%c%d" % (i, i - 1, i - 1))
        else:
            out.append("  %%c%d = const %d : i32" % (i, i))
        out.append("  for %%i%d in 0 .. 4 {\n    store @out[%%i%d], %%c%d\n  }" % (i, i, i))
    out.append("}")
    return out

def statements(n):
    out = ["field @out : i32[16]", "kernel @k() {", "  for %i in 0 .. 16 {", "    %v0 = add %i, %i"]
    out += ["    %%v%d = add %%v%d, %%i" % (j, j - 1) for j in range(1, n)]
    out += ["    store @out[%%i], %%v%d" % (n - 1), "  }", "}"]
    return out

def launches(n):
    """A split stream: one serial task of n statements launched n times."""
    body = ["    %v0 = load @out[]"] + ["    %%v%d = add %%v%d, %%v%d" % (j, j - 1, j - 1) for j in range(1, n)]
    body.append("    %one = const 1 : i32\n    %w = add %v0, %one\n    store @out[], %w")
    task = "module @k.0 {\n  field @out : i32\n\n  task @k.0 of @k() serial {\n%s\n  }\n}" % "\n".join(body)
    main = "module @main {\n  field @out : i32\n\n  kernel @k() {\n%s\n  }\n}" % "\n".join(["    launch @k.0"] * n)
    return [task, "", main]

def kernels(n):
    out = ["field @out : i32[4]"]
    out += ["kernel @k%d() {\n  for %%i in 0 .. 4 {\n    store @out[%%i], %%i\n  }\n}" % i for i in range(n)]
    return out

def fieldloops(n):
    out = ["field @f%d : i32[4]" % i for i in range(n)] + ["kernel @k() {"]
    out += ["  for %%i%d in 0 .. 4 {\n    store @f%d[%%i%d], %%i%d\n  }" % (i, i, i, i) for i in range(n)]
    return out + ["}"]

def fields(n):
    out = ["field @f%d : i32[4]" % i for i in range(n)]
    out.append("kernel @k() {\n  for %i in 0 .. 4 {")
    out += ["    store @f%d[%%i], %%i" % i for i in range(n)]
    out.append("  }\n}")
    return out

def functions(n, chain=64):
    out = ["field @out : i32[4]"]
    for i in range(n):
        if (i + 1) % chain == 0 or i == n - 1:
            out.append("func @f%d(%%x: i32) -> i32 {\n  ret %%x\n}" % i)
        else:
            out.append("func @f%d(%%x: i32) -> i32 {\n  %%r = call @f%d(%%x)\n  ret %%r\n}" % (i, i + 1))
    calls = "".join("    %%v%d = call @f%d(%%i)\n    store @out[%%i], %%v%d\n" % (h, h, h) for h in range(0, n, chain))
    out.append("kernel @k() {\n  for %i in 0 .. 4 {\n" + calls + "  }\n}")
    return out

def params(n):
    ps = ", ".join("%%p%d: i32 = %d" % (i, i) for i in range(n))
    out = ["field @out : i32[64]", "kernel @k(%s) {" % ps, "  for %i in 0 .. 64 {", "    %s0 = add %i, %p0"]
    out += ["    %%s%d = add %%s%d, %%p%d" % (i, i - 1, i) for i in range(1, n)]
    out += ["    store @out[%%i], %%s%d" % (n - 1), "  }", "}"]
    return out

def depth(n):
    out = ["field @out : i32[4]"]
    for i in range(n):
        body = "  ret %x" if i == n - 1 else "  %%r = call @f%d(%%x)\n  ret %%r" % (i + 1)
        out.append("func @f%d(%%x: i32) -> i32 {\n%s\n}" % (i, body))
    out.append("kernel @k() {\n  for %i in 0 .. 4 {\n    %v = call @f0(%i)\n    store @out[%i], %v\n  }\n}")
    return out

def wide_depth(n, width=300):
    """A call chain n deep of functions of `width` parameters, each passing
    all of them on (the verifier's call-depth limit is 512)."""
    ps = ", ".join("%%x%d: i32" % j for j in range(width))
    args = ", ".join("%%x%d" % j for j in range(width))
    out = ["field @out : i32[1024]"]
    # Each function also sums its parameters: values an -O 0 frame spills.
    sums = "\n".join(["  %s0 = add %x0, %x0"] + ["  %%s%d = add %%s%d, %%x%d" % (j, j - 1, j) for j in range(1, width)])
    for i in range(n):
        tail = "  ret %%s%d" % (width - 1)
        if i < n - 1:
            tail = "  %%r = call @f%d(%s)\n  %%t = add %%r, %%s%d\n  ret %%t" % (i + 1, args, width - 1)
        out.append("func @f%d(%s) -> i32 {\n%s\n%s\n}" % (i, ps, sums, tail))
    first = ", ".join(["%i"] * width)
    out.append("kernel @k() {\n  for %%i in 0 .. 1024 {\n    %%v = call @f0(%s)\n    store @out[%%i], %%v\n  }\n}" % first)
    return out

def deadchain(n):
    out = ["kernel @k(%a: i32 = 1) {", "  %d0 = add %a, %a"]
    out += ["  %%d%d = add %%d%d, %%a" % (i, i - 1) for i in range(1, n)]
    out.append("}")
    return out

def nested(n, depth=250):
    out = ["field @out : i32[1]", "kernel @k() {"]
    out += ["for %%l%d in 0 .. 1 {" % d for d in range(depth)]
    out += ["store @out[%%l0], %%l%d" % (j % depth) for j in range(n)] + ["}"] * (depth + 1)
    return out

def errors(n):
    out = ["kernel @k(%x: f32 = 1.0) {", "  %i = const 1 : i32"]
    out += ["  %%e%d = add %%i, %%x" % i for i in range(n)]
    out.append("}")
    return out

GEN = {
    "statements": statements, "loops": lambda n: loops(n, False), "carries": lambda n: loops(n, True),
    "tasks": lambda n: loops(n, False), "launches": launches, "kernels": kernels, "fieldloops": fieldloops, "fields": fields, "functions": functions, "params": params, "depth": depth, "wide-depth": wide_depth,
    "deadchain": deadchain, "nested": nested, "errors": errors,
}

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in GEN:
        sys.exit("usage: gen-scale.py {%s} N" % "|".join(GEN))
    print("\n".join(GEN[sys.argv[1]](int(sys.argv[2]))))
