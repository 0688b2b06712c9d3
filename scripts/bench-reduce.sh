#!/usr/bin/env bash
# kiln-reduce's figures for docs/performance.md ("kiln-reduce"): the two
# reductions of tests/reduce.rs (a planted JIT/interpreter disagreement and
# an error-message reproducer in a generated 502-statement kernel), each
# with -j 1 and -j 2, in one run: wall time, tries, and the result's size.
# Usage: scripts/bench-reduce.sh [BIN_DIR] (default target/release).
set -euo pipefail
bin=$(cd "${1:-target/release}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export KILN_CACHE_DIR=$work/cache
python3 - "$work" <<'PY'
import sys
def gen(planted):
    t = "field @a : i32[64]\nfield @b : i32[64]\nfield @out : i32[4]\n\nkernel @gen(%n: i32 = 64, %k: i32 = 5) {\n"
    for l in range(4):
        t += f"  for %i{l} in 0 .. %n {{\n"
        for g in range(31):
            f = "@a" if g % 2 == 0 else "@b"
            t += f"    %c{l}_{g} = const {g + 3} : i32\n    %m{l}_{g} = mul %i{l}, %c{l}_{g}\n"
            t += f"    %s{l}_{g} = add %m{l}_{g}, %k\n    store {f}[%i{l}], %s{l}_{g}\n"
            if l == 2 and g == 15:
                t += planted.replace("%i", "%i2")
        t += "  }\n"
    return t + "}\n"
open(sys.argv[1] + "/race.kir", "w").write(gen("    %z = const 0 : i32\n    store @out[%z], %i\n"))
open(sys.argv[1] + "/crash.kir", "w").write(gen("    %big = const 100 : i32\n    store @b[%big], %i\n"))
PY
cat > "$work/disagree.sh" <<SH
#!/bin/sh
jit=\$("$bin/kiln-run" --no-cache --threads 1 --print @out "\$1") || exit 1
interp=\$("$bin/kiln-run" --engine interp --iteration-order descending --print @out "\$1") || exit 1
[ "\$jit" != "\$interp" ]
SH
printf '#!/bin/sh\n"%s/kiln-run" --engine interp "$1" 2>&1 | grep -q "out of bounds for field @b"\n' "$bin" > "$work/crash.sh"
chmod +x "$work/disagree.sh" "$work/crash.sh"
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
for case in disagree:race crash:crash; do
  for j in 1 2; do
    "$bin/kiln-reduce" -q -j "$j" --test "$work/${case%%:*}.sh" "$work/${case##*:}.kir" -o "$work/out-$j.kir" 2>&1 | sed "s/^/${case%%:*} -j $j: /"
  done
  cmp -s "$work/out-1.kir" "$work/out-2.kir" && echo "${case%%:*}: -j 1 and -j 2 wrote the same file"
done
