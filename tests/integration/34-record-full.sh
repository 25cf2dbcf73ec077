#!/bin/bash
# 34-record-full: a recording that fills the pack is sealed at the last
# byte that fits, exit status 2 says so, and the other recordings are
# untouched; a pack with no free space refuses before writing anything.
. "$(dirname "$0")/../lib.sh"
echo "34-record-full: pack full"

make_members 2 48M
check "mkfs 2 small members" mkfs.recfs -f -q -c 256K "$PACK"
head -c 3000000 /dev/urandom >"$T_DIR/a"
check "a first recording" recfs-record --buffer 8M -q "$PACK" a <"$T_DIR/a"
cap=$(recfs info "$PACK" | sed -n 's/^capacity:.*(\([0-9]*\) bytes).*/\1/p')
row=$((262144 * 2))
sha_a=$(recfs cat "$PACK" a | sha256sum)

run recfs-record --buffer 8M -i gen:counter "$PACK" big
check "pack full: exit status 2 (got $RC)" test "$RC" = 2
check "pack full: the last line says so" grep -q "'big' sealed at [0-9]* bytes.*: pack full$" <<<"$(tail -1 <<<"$OUT")"
len=$(recfs ls -l "$PACK" | awk '$1=="big"{print $2}')
state=$(recfs ls -l "$PACK" | awk '$1=="big"{print $3}')
check "pack full: sealed ($state)" test "$state" = sealed
# a's 3000000 bytes keep 6 rows; big gets every other row
check "pack full: filled all the rest ($len = $cap - 6 rows)" test "$len" = $((cap - 6 * row))
check "pack full: nothing free is left" grep -Eq 'largest free: +0 B' <<<"$(recfs info "$PACK")"
run recfs-play --check counter "$PACK" big
check "pack full: content verified ($OUT)" grep -q "'big': $len bytes, sealed, counter pattern: 0 bad bytes" <<<"$OUT"
check "pack full: the other recording is untouched" test "$(recfs cat "$PACK" a | sha256sum)" = "$sha_a"

refused "no free space at all: refused, members unchanged" "pack full: no free space for 'more'" \
	recfs-record --buffer 8M -q -i gen:counter --size 1M "$PACK" more
check "no free space: exit status 2" test "$RC" = 2

# --size ending exactly at the pack's end is a size stop, not "full"
check "rm the big recording" recfs rm "$PACK" big
run recfs-record --buffer 8M -q -i gen:counter --size "$len" "$PACK" exact
check "a --size that just fits: exit 0 (got $RC: $OUT)" test "$RC" = 0
finish
