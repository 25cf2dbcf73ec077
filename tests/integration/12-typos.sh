#!/bin/bash
# 12-typos: a user's data on a pack is never at the mercy of a typo.
#  - A file a tool writes (recfs-record --stats-json, recfs cat's standard
#    output) that is, or resolves to, a member is refused before anything
#    is written: the same file, a symlink to it, the same block device.
#  - Every number on every tool's command line is parsed strictly: NaN,
#    infinities, signs, hex, exponents, spaces, overflow and junk are
#    refused with one line naming the option.
#  - A library error that quotes the one before it reads as one clean line.
# After every refused command the members are byte-identical.
. "$(dirname "$0")/../lib.sh"
echo "12-typos: output files against members, strict numbers, clean messages"

make_members 3 4M
check "mkfs" mkfs.recfs -q -c 64K -n 64 "$PACK"
check "a recording to protect" recfs-record -q -i gen:counter --size 200K "$PACK" keep
m0=${MEMBERS%% *}

# --- output files
refused "--stats-json onto a member" "--stats-json $m0 is member $m0 of the pack" \
	recfs-record -q -i gen:counter --size 64K --stats-json "$m0" "$PACK" r1
ln -s "$m0" "$T_DIR/link"
refused "--stats-json through a symlink to a member" "--stats-json $T_DIR/link is member $m0" \
	recfs-record -q -i gen:counter --size 64K --stats-json "$T_DIR/link" "$PACK" r1
snap=$(snapshot $MEMBERS)
run bash -c 'recfs-record -q -i gen:counter --size 64K --stats-json - "$1" r1 1<>"$2"' _ "$PACK" "$m0"
check "--stats-json - with stdout opened on a member is refused (exit $RC)" test "$RC" != 0
check "... saying so in one line ($OUT)" test "$(grep -c 'standard output' <<<"$OUT")" = 1
expect_unchanged "--stats-json - onto a member" "$snap" $MEMBERS
run bash -c 'recfs cat "$1" keep 1<>"$2"' _ "$PACK" "$m0"
check "recfs cat with stdout opened on a member is refused (exit $RC: $OUT)" grep -q "standard output (redirected) is member $m0" <<<"$OUT"
expect_unchanged "recfs cat onto a member" "$snap" $MEMBERS
# descriptors a tool writes to: --ready-fd, fsck's -C, a daemon's stdout
outfd() { # DESC PATTERN CMD...: CMD (given fd 3 and stdout on member m0) refused, members unchanged
	local d=$1 pat=$2
	shift 2
	snap=$(snapshot $MEMBERS)
	run bash -c '"$@" 3<>"$M0" 1<>"$M0"' _ "$@"
	check "$d is refused (exit $RC: $OUT)" eval 'test "$RC" != 0 && grep -q -- "$pat" <<<"$OUT" && test "$(grep -c . <<<"$OUT")" = 1'
	expect_unchanged "$d" "$snap" $MEMBERS
}
export M0=$m0
outfd "recfs-record --ready-fd onto a member" "--ready-fd (descriptor) is member $m0" \
	timeout 20 recfs-record -q -i udp:127.0.0.1:0 --ready-fd 3 "$PACK" r9
outfd "recfsd --ready-fd onto a member" "is member $m0" timeout 20 recfsd -l 127.0.0.1:0 -i udp:127.0.0.1:0 --ready-fd 3 "$PACK"
outfd "fsck.recfs -C onto a member" "-C (descriptor 3) is member $m0" fsck.recfs -n -C 3 "$PACK"
snap=$(snapshot $MEMBERS)
run bash -c 'timeout 20 recfsd -l 127.0.0.1:0 -i udp:127.0.0.1:0 "$1" 1<>"$2"' _ "$PACK" "$m0"
check "recfsd with stdout on a member is refused ($OUT)" grep -q "standard output (redirected) is member $m0" <<<"$OUT"
expect_unchanged "recfsd with stdout on a member" "$snap" $MEMBERS
run bash -c 'fsck.recfs -n "$1" 1<>"$2"' _ "$PACK" "$m0"
check "fsck.recfs with stdout on a member is refused ($OUT)" grep -q "standard output (redirected) is member $m0" <<<"$OUT"
expect_unchanged "fsck.recfs with stdout on a member" "$snap" $MEMBERS
check "--stats-json elsewhere still works" recfs-record -q -i gen:counter --size 64K --stats-json "$T_DIR/s.json" "$PACK" r2
check "recfs cat to a file still works" bash -c 'recfs cat "$1" keep >"$2/keep.out"' _ "$PACK" "$T_DIR"

# the same through loop devices: a block device member
l=()
for m in $MEMBERS; do
	d=$(losetup -f --show "$m") || break
	cleanup_add "losetup -d $d"
	l+=("$d")
done
if [ "${#l[@]}" = 3 ]; then
	LPACK=$(IFS=,; echo "${l[*]}")
	snap=$(snapshot $MEMBERS)
	run recfs-record -q -i gen:counter --size 64K --stats-json "${l[1]}" "$LPACK" r3
	check "--stats-json onto a block-device member is refused ($OUT)" grep -q "is member ${l[1]} of the pack" <<<"$OUT"
	expect_unchanged "--stats-json onto a block-device member" "$snap" $MEMBERS
	for d in "${l[@]}"; do losetup -d "$d"; done
else
	fail "could not set up loop devices"
fi

# --- numbers: every option of every tool, hostile values
BAD=(nan NaN inf -inf -1 +5 1e3 0x10 "" " 5" "5 " 5junk 99999999999999999999999 1.5.2)
# numopt DESC CMD... (with @ where the value goes): each value refused in
# one line naming the option, the members unchanged.  The members are
# hashed before the first value and after the last (a command that wrote
# would show there: no value undoes another's write), not around each of
# the 600 commands, which took most of this test's 45 s.
numopt() {
	local opt=$1 v a line
	shift
	local ok=1
	snap=$(snapshot $MEMBERS)
	for v in "${BAD[@]}"; do
		local args=()
		for a in "$@"; do args+=("${a//@/$v}"); done
		run "${args[@]}"
		line=$(head -n 1 <<<"$OUT")
		if [ "$RC" = 0 ] || [ "$(grep -c . <<<"$OUT")" != 1 ] || ! grep -qF -- "$opt" <<<"$line"; then
			fail "$opt '$v' not refused in one line naming it (exit $RC: $OUT)"
			ok=0
		fi
	done
	[ "$(snapshot $MEMBERS)" = "$snap" ] || { fail "$opt: members changed by one of its ${#BAD[@]} hostile values"; ok=0; }
	[ $ok = 1 ] && pass "$opt: ${#BAD[@]} hostile values refused, members unchanged"
}
R=(recfs-record -q -i gen:counter)
numopt --commit-interval "${R[@]}" -c @ "$PACK" n1
numopt --duration "${R[@]}" -d @ "$PACK" n1
numopt --size "${R[@]}" -s @ "$PACK" n1
numopt --queue-depth "${R[@]}" -Q @ "$PACK" n1
numopt --buffer "${R[@]}" -b @ "$PACK" n1
numopt --frame-size "${R[@]}" --frame-size @ "$PACK" n1
numopt --threads recfs-record -q -i gen:vdif --threads @ "$PACK" n1
numopt --frame-rate recfs-record -q -i gen:vdif --frame-rate @ "$PACK" n1
numopt --rate "${R[@]}" --rate @ "$PACK" n1
numopt --packet-size recfs-record -q -i udp:0 -P @ "$PACK" n1
numopt --strip recfs-record -q -i udp:0 -S @ "$PACK" n1
numopt --rcvbuf recfs-record -q -i udp:0 --rcvbuf @ "$PACK" n1
numopt --input recfs-record -q -i udp:127.0.0.1:@ "$PACK" n1
numopt --rate recfs-play --gen counter --udp 127.0.0.1:9 -s 1M --rate @
numopt --size recfs-play --gen counter --udp 127.0.0.1:9 -s @
numopt --duration recfs-play --gen counter --udp 127.0.0.1:9 -d @
numopt --packet-size recfs-play --gen counter --udp 127.0.0.1:9 -s 1M -P @
numopt --sndbuf recfs-play --gen counter --udp 127.0.0.1:9 -s 1M --sndbuf @
numopt --offset recfs cat --offset @ "$PACK" keep
numopt --length recfs cat --length @ "$PACK" keep
BAD_ALL=("${BAD[@]}")
BAD=(nan inf -1 +5 1e3 0x10 " 5" 5junk 99999999999999999999999) # -C alone is the option without a value
numopt -C fsck.recfs -n -C@ "$PACK"
BAD=("${BAD_ALL[@]}")
numopt -t recfs ctl -t @ 127.0.0.1:9 'record?'
numopt --queue-depth timeout 20 recfsd -Q @ "$PACK"
numopt --buffer timeout 20 recfsd -b @ "$PACK"
numopt --commit-interval timeout 20 recfsd -c @ "$PACK"
numopt --ready-fd timeout 20 recfsd --ready-fd @ "$PACK"
numopt --cpu timeout 20 recfsd --cpu @ "$PACK"
numopt --input timeout 20 recfsd -i udp:127.0.0.1:@ "$PACK"
numopt --packet-size timeout 20 recfsd -P @ "$PACK"
numopt --strip timeout 20 recfsd -S @ "$PACK"
numopt --rcvbuf timeout 20 recfsd --rcvbuf @ "$PACK"
numopt --listen timeout 20 recfsd -l 127.0.0.1:@ "$PACK"
numopt --metrics timeout 20 recfsd -m 127.0.0.1:@ "$PACK"
numopt --split timeout 20 recfsd -F vdif --split vdif-thread:@ "$PACK"
numopt --frame-size recfs-play --gen vdif --udp 127.0.0.1:9 -s 1M --frame-size @
numopt --threads recfs-play --gen vdif --udp 127.0.0.1:9 -s 1M --threads @
numopt --frame-rate recfs-play --gen vdif --udp 127.0.0.1:9 -s 1M --frame-rate @
# the engine's options are one table: the same range and the same words in
# both programs (recfsd took a 1-byte --buffer, and worded --format apart)
for prog in "recfs-record -q -i gen:counter" "timeout 20 recfsd"; do
	name=${prog#timeout 20 }
	name=${name%% *}
	refused "$name: --buffer below 1M" "--buffer '512K': too small; want 1M to 1T" \
		$prog -b 512K "$PACK" n1
	refused "$name: --format typo" "--format: 'vdfi' is not raw or vdif" \
		$prog -F vdfi "$PACK" n1
done
refused "recfsd: more CPUs than inputs" "recfsd: --cpu '0,1': 2 CPUs for 1 input" \
	timeout 20 recfsd -i udp:127.0.0.1:9 --cpu 0,1 "$PACK"
refused "recfsd: an empty thread in --split" "recfsd: --split 'vdif-thread:0-3,': an empty thread in the list" \
	timeout 20 recfsd -F vdif --split vdif-thread:0-3, "$PACK"
numopt "option cache_mb" recfs-mount -o cache_mb=@ "$PACK" "$T_DIR"
numopt "option umask" recfs-mount -o umask=@ "$PACK" "$T_DIR"
make_members 2 4M fresh
numopt --chunk-size mkfs.recfs -q -c @ "$PACK"
numopt --max-recordings mkfs.recfs -q -n @ "$PACK"
refused "-s 0 says why" "--size '0': too small; want 1 to" recfs-record -q -i gen:counter -s 0 "$PACK" z
refused "-c nan says why" "--commit-interval 'nan': not a number; want 0.01 to 3600 seconds" \
	recfs-record -q -i gen:counter -c nan "$PACK" z

# --- a message that quotes the one before it (recfs rm on read-only members)
make_members 2 4M ro
check "mkfs" mkfs.recfs -q -c 64K -n 64 "$PACK"
check "record" recfs-record -q -i gen:counter --size 100K "$PACK" r1
ro=()
for m in $MEMBERS; do
	d=$(losetup -r -f --show "$m") || break
	cleanup_add "losetup -d $d"
	ro+=("$d")
done
RPACK=$(IFS=,; echo "${ro[*]}")
run recfs rm "$RPACK" r1
check "rm on read-only members fails (exit $RC)" test "$RC" != 0
check "its message is one line ($OUT)" test "$(grep -c . <<<"$OUT")" = 1
check "its message says what it was deleting once" test "$(grep -o "r1'" <<<"$OUT" | wc -l)" -le 1
check "its message ends with the cause" grep -Eq '(Read-only file system|Operation not permitted|Permission denied)$' <<<"$OUT"
finish
