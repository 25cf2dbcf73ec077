# Shared by the bench/*.sh scripts (sourced after they cd to the top).
. tests/tools/udp-lib.sh

# bytes SIZE: 4096, 64K, 1.5G, 2GiB, 1T as a byte count
bytes() { python3 -c '
import sys
s=sys.argv[1].upper().rstrip("B").rstrip("I")
m={"K":1<<10,"M":1<<20,"G":1<<30,"T":1<<40}
print(int(float(s[:-1])*m[s[-1]]) if s[-1] in m else int(s))' "$1"; }
