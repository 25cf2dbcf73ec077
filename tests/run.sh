#!/bin/bash
# Runs every test: cmocka unit binaries, shell integration tests, the fsck
# image suite.  Ends with the line "N passed, N failed".
# Usage: tests/run.sh [PATTERN...]   (only tests whose name contains one)
# RECFS_SKIP="PATTERN..." leaves out the tests whose name contains one.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export BUILD
case $BUILD in
/*) export RECFS_BIN="$BUILD/bin" ;;
*) export RECFS_BIN="$PWD/$BUILD/bin" ;;
esac
pats=("$@")
read -ra skips <<<"${RECFS_SKIP:-}"
# wanted NAME: not skipped, and no pattern given or NAME contains one of them
wanted() {
	local p
	for p in "${skips[@]}"; do [[ $1 == *"$p"* ]] && return 1; done
	[ ${#pats[@]} = 0 ] && return 0
	for p in "${pats[@]}"; do [[ $1 == *"$p"* ]] && return 0; done
	return 1
}
results=$(mktemp /tmp/recfs-results.XXXXXX)
export RECFS_RESULTS=$results
logdir=$BUILD/test-logs
mkdir -p "$logdir"
trap 'rm -f "$results"' EXIT

run_unit() {
	local t=$1 name log out
	name=$(basename "$t")
	log=$logdir/$name.log
	local t0=$SECONDS
	CMOCKA_MESSAGE_OUTPUT=stdout "$t" >"$log" 2>&1
	local rc=$? secs=$((SECONDS - t0))
	local p f
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
	p=${p:-0}; f=${f:-0}
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then f=1; fi
	for ((i = 0; i < p; i++)); do echo "PASS $name" >>"$results"; done
	for ((i = 0; i < f; i++)); do echo "FAIL $name" >>"$results"; done
	if [ "$f" != 0 ]; then echo "FAIL $name (see $log)"; grep -E '^\[  (FAILED|ERROR) |^\[ +ERROR|error:|Failure' "$log" | head -20; else echo "ok   $name ($p, ${secs}s)"; fi
}

run_script() {
	local t=$1 name log before after rc
	name=${t#tests/}
	log=$logdir/$(echo "$name" | tr / _).log
	before=$(wc -l <"$results")
	local t0=$SECONDS
	timeout -k 10 900 bash "$t" >"$log" 2>&1
	rc=$?
	local secs=$((SECONDS - t0))
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		# killed: its traps did not run; detach what it left mounted
		awk '$2 ~ "^/var/tmp/recfs-test" && $3 ~ /^fuse/ {print $2}' /proc/mounts |
			while read -r m; do fusermount3 -uz "$m"; done
	fi
	after=$(wc -l <"$results")
	if [ "$rc" != 0 ]; then echo "FAIL $name: exit $rc" >>"$results"; fi
	if [ "$after" = "$before" ] && [ "$rc" = 0 ]; then echo "FAIL $name: asserted nothing" >>"$results"; fi
	local nf
	nf=$(tail -n +$((before + 1)) "$results" | LC_ALL=C grep -c '^FAIL')
	if [ "$nf" != 0 ]; then
		echo "FAIL $name (see $log, ${secs}s)"
		tail -n +$((before + 1)) "$results" | LC_ALL=C grep -a '^FAIL' | head -20
	else
		echo "ok   $name ($((after - before)), ${secs}s)"
	fi
}

for t in "$BUILD"/tests/test_*; do
	[ -x "$t" ] || continue
	wanted "$t" || continue
	run_unit "$t"
done
for t in tests/integration/*.sh tests/fsck/run.sh; do
	[ -f "$t" ] || continue
	wanted "$t" || continue
	run_script "$t"
done

np=$(LC_ALL=C grep -c '^PASS' "$results")
nf=$(LC_ALL=C grep -c '^FAIL' "$results")
echo "$np passed, $nf failed"
[ "$nf" = 0 ] && [ "$np" != 0 ]
