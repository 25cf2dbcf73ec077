#!/bin/bash
# fsck.recfs as a tool: options and exit status as fsck(8), fsck -t recfs,
# members as separate arguments, preen mode, a pack in use, --progress,
# every problem code documented in the man page.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$(dirname "$0")/../lib.sh"
cd "$T_DIR"
HELPER=$(cd "$RECFS_BIN/.." && pwd)/tests/fsck-helper
[ -x "$HELPER" ] || { fail "build $HELPER first (make check)"; exit 1; }

make_members 2 32M
"$HELPER" mkfs "$PACK" 64K 16 tooltest 0123456789abcdef0123456789abcdef
"$HELPER" write "$PACK" one 500000 100000
"$HELPER" write "$PACK" two 300000 300000

run fsck.recfs --help
check "--help exits 0" test "$RC" = 0
check "--help names --verify" grep -q -- --verify <<<"$OUT"
run fsck.recfs --version
check "--version" grep -q "^fsck.recfs (recfs) " <<<"$OUT"
expect_err "-n with -y is a usage error" 16 "only one of" fsck.recfs -n -y "$PACK"
expect_err "no pack is a usage error" 16 "Usage" fsck.recfs -n
expect_err "bad option is a usage error" 16 "Usage" fsck.recfs --bogus "$PACK"
expect_err "interactive without a terminal" 8 "need a terminal" fsck.recfs "$PACK" </dev/null
expect_err "missing member file" 8 "nope.img" fsck.recfs -n "$T_DIR/m0.img,$T_DIR/nope.img"

run fsck.recfs -n "$PACK"
check "clean pack: -n exits 0" test "$RC" = 0
check "summary line" grep -q "pack 'tooltest': 2 members, 2 recordings" <<<"$OUT"
run fsck.recfs -y $MEMBERS
check "members as separate arguments" test "$RC" = 0
run fsck.recfs -n "$T_DIR/m1.img,$T_DIR/m0.img"
check "members in any order" test "$RC" = 0

if command -v fsck >/dev/null; then
	run env PATH="$RECFS_BIN:$PATH" fsck -t recfs -y "$PACK"
	check "fsck -t recfs runs fsck.recfs" test "$RC" = 0
	check "fsck -t recfs output" grep -q "pack 'tooltest'" <<<"$OUT"
	"$HELPER" bit "$PACK" 77 set
	run env PATH="$RECFS_BIN:$PATH" fsck -t recfs -a "$PACK"
	check "fsck -t recfs -a repairs a leak: exit 1" test "$RC" = 1
fi

# preen: a leak is safe to repair, an overlap is not
"$HELPER" bit "$PACK" 100 set
run fsck.recfs -p "$PACK"
check "-p repairs a leak: exit 1" test "$RC" = 1
check "-p says what it freed" grep -q "PR_BMP_LEAK: rows 100-100" <<<"$OUT"
run fsck.recfs -p "$PACK"
check "-p then clean: exit 0" test "$RC" = 0
"$HELPER" set-entry "$PACK" two ext_start 0
snap=$(snapshot $MEMBERS)
run fsck.recfs -p "$PACK"
check "-p stops at an overlap: exit 4" test "$RC" = 4
check "-p says to run manually" grep -q "UNEXPECTED INCONSISTENCY" <<<"$OUT"
expect_unchanged "-p on an unsafe problem" "$snap" $MEMBERS
run fsck.recfs -y "$PACK"
check "-y repairs the overlap: exit 1" test "$RC" = 1
run fsck.recfs -y "$PACK"
check "then clean" test "$RC" = 0

# --verify --progress: a bar with rate and time left on stderr
OUT=$(fsck.recfs -n --verify --progress "$PACK" 2>progress.txt)
RC=$?
check "--verify --progress exits 0" test "$RC" = 0
check "--progress draws a bar with rate and ETA" grep -q "verify \[#*\] 100.0% .*/s ETA" progress.txt
check "--verify counts the bytes" grep -q "verify: 500000 bytes checked, 0 bad chunks" <<<"$OUT"

# a pack in use (a writer holds the member lock): repair refused, -n allowed
python3 -c 'import fcntl, sys, time
f = open(sys.argv[1], "r+")
fcntl.flock(f, fcntl.LOCK_EX)
time.sleep(60)' "$T_DIR/m1.img" &
lockpid=$!
cleanup_add "kill $lockpid"
for _ in $(seq 50); do
	flock -n "$T_DIR/m1.img" true 2>/dev/null || break
	sleep 0.1
done
expect_err "-y on a locked member" 8 "m1.img: in use" fsck.recfs -y "$PACK"
run fsck.recfs -n "$PACK"
check "-n beside a writer" test "$RC" = 0
kill $lockpid 2>/dev/null
wait $lockpid 2>/dev/null

# interactive: one question per repair on the terminal (script(1) gives a pty)
if command -v script >/dev/null; then
	"$HELPER" bit "$PACK" 50 set
	"$HELPER" bit "$PACK" 60 set
	run bash -c "(printf 'n\ny\n'; sleep 1) | script -qec 'fsck.recfs $PACK' /dev/null"
	check "interactive: one repair refused, one done: exit 5 ($RC)" test "$RC" = 5
	run fsck.recfs -n "$PACK"
	check "interactive: the refused leak is still there" grep -q "PR_BMP_LEAK: rows 50-50" <<<"$OUT"
	check "interactive: the accepted one is gone" bash -c "! grep -q 'rows 60-60' <<<\"\$1\"" _ "$OUT"
	snap=$(snapshot $MEMBERS)
	run bash -c "(printf 'q\n'; sleep 1) | script -qec 'fsck.recfs $PACK' /dev/null"
	check "interactive: quit is exit 32 (+4 left): $RC" test "$RC" = 36
	expect_unchanged "interactive quit" "$snap" $MEMBERS
	run fsck.recfs -y "$PACK"
fi

# the man page documents every problem code
codes=$(grep -o '"PR_[A-Z_]*"' "$ROOT/fs/lib/check/problem.c" | tr -d '"' | sort -u)
check "the problem table has codes ($(wc -w <<<"$codes"))" test "$(wc -w <<<"$codes")" -ge 30
for code in $codes; do
	grep -q "^.B $code (" "$ROOT/man/fsck.recfs.8" || fail "man page lacks $code"
done
pass "man page lists every problem code"
check "man page has EXIT STATUS" grep -q "^.SH EXIT STATUS" "$ROOT/man/fsck.recfs.8"
finish
