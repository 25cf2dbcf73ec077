#!/bin/bash
# The fsck image regression suite, e2fsprogs style.  Each folder here is a
# case: `name` (one line), `script` (builds the damaged pack from a fresh
# mkfs, sourced with common.sh in a private folder), `expect.1` and
# `expect.2` (output and exit status of the first and second fsck -y runs),
# optional `opts` (more fsck options) and `post` (checks after the runs).
# Before the -y runs, fsck -n must leave every member byte-identical, and a
# -y run that repaired nothing (exit without bit 1) must too.
#   tests/fsck/run.sh [CASE...]
#   RECFS_FSCK_REGEN=1 tests/fsck/run.sh   rewrite the expect files
. "$(dirname "$0")/../lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
FSCK=$RECFS_BIN/fsck.recfs
HELPER=$(cd "$RECFS_BIN/.." && pwd)/tests/fsck-helper
export HELPER RECFS_BIN
regen=${RECFS_FSCK_REGEN:-0}
[ -x "$FSCK" ] && [ -x "$HELPER" ] || { fail "build fsck.recfs and $HELPER first (make check)"; exit 1; }

cases=("$@")
[ ${#cases[@]} = 0 ] && cases=($(cd "$HERE" && ls -d */ | tr -d /))
for c in "${cases[@]}"; do
	d=$HERE/$c
	[ -f "$d/script" ] || continue
	w=$T_DIR/$c
	mkdir -p "$w"
	echo "--- $c: $(cat "$d/name")"
	if ! (cd "$w" && . "$HERE/common.sh" && . "$d/script") >"$w/script.log" 2>&1; then
		fail "$c: script failed: $(tail -3 "$w/script.log")"
		continue
	fi
	args=$(cat "$w/args" 2>/dev/null || echo m0.img,m1.img)
	opts=$(cat "$d/opts" 2>/dev/null || true)
	snap=$(cd "$w" && cksum -- *.img)
	(cd "$w" && "$FSCK" -n $opts $args) >"$w/out.n" 2>&1
	rcn=$?
	if [ "$snap" = "$(cd "$w" && cksum -- *.img)" ]; then pass "$c: -n wrote nothing"; else fail "$c: -n changed a member"; fi
	for run in 1 2; do
		snap=$(cd "$w" && cksum -- *.img)
		(cd "$w" && "$FSCK" -y $opts $args) >"$w/out.$run" 2>&1
		rc=$?
		echo "Exit status is $rc" >>"$w/out.$run"
		# a run that repaired nothing changed nothing
		if [ $((rc & 1)) = 0 ]; then
			if [ "$snap" = "$(cd "$w" && cksum -- *.img)" ]; then
				pass "$c: run $run without repairs wrote nothing"
			else
				fail "$c: run $run repaired nothing but changed a member"
			fi
		fi
		if [ "$regen" = 1 ]; then
			cp "$w/out.$run" "$d/expect.$run"
		elif diff -u "$d/expect.$run" "$w/out.$run" >"$w/diff.$run"; then
			pass "$c: run $run"
		else
			fail "$c: run $run differs from expect.$run"
			cat "$w/diff.$run"
		fi
	done
	# -n finds what -y finds: clean exactly when the first run is clean
	want1=$(tail -1 "$d/expect.1" | awk '{print $NF}')
	if { [ "$want1" = 0 ] && [ "$rcn" = 0 ]; } || { [ "$want1" != 0 ] && [ "$rcn" != 0 ]; }; then
		pass "$c: -n exit $rcn agrees"
	else
		fail "$c: -n exit $rcn but first -y run exit $want1"
	fi
	if [ -f "$d/post" ]; then
		if (cd "$w" && . "$HERE/common.sh" && . "$d/post") >"$w/post.log" 2>&1; then
			pass "$c: post checks"
		else
			fail "$c: post checks: $(tail -3 "$w/post.log")"
		fi
	fi
done
finish
