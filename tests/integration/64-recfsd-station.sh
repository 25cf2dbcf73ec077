#!/bin/bash
# recfsd driven as a FlexBuff station procedure drives jive5ab: configure
# (version?, mode=, net_protocol=, net_port=, mtu=), record=on with
# experiment and station, record? polling, record=off, scan_check?,
# dir_info?, status?; every reply line asserted, then the recording checked
# frame by frame.  Also: wrong parameters, unknown keywords, refusals.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/recfsd-lib.sh"
echo "64: recfsd as a station procedure drives it"

make_members 4 64M
check "mkfs" mkfs.recfs -q -c 256K "$PACK"
port=$(free_port)
check "recfsd ready (vdif, udps: --strip 8)" start_recfsd -F vdif -S 8 -i "udp:127.0.0.1:$port" --buffer 32M "$PACK"
ver=$(recfsd --version | awk '{print $2}')
expect_reply "version?" "version?" "!version \\? 0 : recfsd : $ver ;"
expect_reply "mode= VDIF as configured" "mode = VDIF_8000-512-16-2" '!mode = 0 ;'
expect_reply "mode? in jive5ab's layout: mode, type, tracks, track rate, frame size" "mode?" '!mode \? 0 : VDIF_8000-512-16-2 : VDIF : 32 : 16000000.000 : 8032 ;'
expect_reply "mode= a malformed VDIF mode" "mode = VDIF_8000-512-x-2" "!mode = 8 : mode 'VDIF_8000-512-x-2'. want VDIF_<payload bytes>-<Mbit/s>-<channels>-<bits> ;"
for m in VDIF_8000-512--16-2 VDIF_8000-512-16-2- VDIF_-8000-512-16-2; do
	expect_reply "mode= an empty field ($m) is refused" "mode = $m" "!mode = 8 : mode '$m'. want VDIF_<payload bytes>-<Mbit/s>-<channels>-<bits> ;"
done
expect_reply "mode? unchanged by the refusals" "mode?" '!mode \? 0 : VDIF_8000-512-16-2 : VDIF : 32 : 16000000.000 : 8032 ;'
expect_reply "mode= another data type is refused" "mode=mark5b" "!mode = 8 : mode 'mark5b'. recfsd takes VDIF_<payload>-<Mbit/s>-<channels>-<bits>, mark5b-<Mbit/s>-<channels>-<bits>, raw or none ;"
expect_reply "net_protocol=udps (the sequence-number prefix stripped)" "net_protocol=udps" '!net_protocol = 0 ;'
expect_reply "net_protocol= as FlexBuff sends it, buffer within --rcvbuf" "net_protocol=udps:32000000:256000000:4" '!net_protocol = 0 ;'
expect_reply "net_protocol= as the FS asks above 4 Gbit/s: the socket buffer grown past --rcvbuf" "net_protocol = udpsnor : 128000000 : 256000000 : 4" '!net_protocol = 0 ;'
expect_reply "net_protocol? jive5ab's four fields, the buffer grown" "net_protocol?" '!net_protocol \? 0 : udpsnor : 128000000 : 256000000 : 4 ;'
expect_reply "net_protocol= a socket buffer past INT_MAX: 8" "net_protocol=udps:2048M" "!net_protocol = 8 : socket buffer '2048M' out of range \(0 to 2147483647\) ;"
expect_reply "net_protocol= a unit jive5ab does not take: 6" "net_protocol=udps:2G" "!net_protocol = 6 : invalid socket buffer '2G' \(a number, optionally k or M\) ;"
expect_reply "net_protocol= a junk size: 6" "net_protocol=udps:nan" "!net_protocol = 6 : invalid socket buffer 'nan' \(a number, optionally k or M\) ;"
expect_reply "net_protocol? unchanged by the refusals" "net_protocol?" '!net_protocol \? 0 : udpsnor : 128000000 : 256000000 : 4 ;'
expect_reply "net_protocol=tcp is refused" "net_protocol=tcp" '!net_protocol = 6 : recfsd receives UDP.*'
expect_reply "net_port= the bound port" "net_port=$port" '!net_port = 0 ;'
expect_reply "net_port? in jive5ab's form" "net_port?" "!net_port \\? 0 : 127\\.0\\.0\\.1@$port ;"
expect_reply "net_port= another port is refused" "net_port=1" '!net_port = 6 : inputs are bound when recfsd starts.*'
expect_reply "mtu=9000" "mtu=9000" '!mtu = 0 ;'
expect_reply "mtu? says so" "mtu?" '!mtu \? 0 : 9000 ;'
expect_reply "mtu=nan is a parameter error" "mtu=nan" '!mtu = 8 : mtu = 64 to 65535 ;'
expect_reply "record? before any scan" "record?" '!record \? 0 : off ;'
expect_reply "scan_check? before any scan" "scan_check?" '!scan_check \? 4 : no scan recorded yet ;'
expect_reply "status? idle" "status?" '!status \? 0 : 0x00000001 ;'
expect_reply "record=off when not recording" "record=off" '!record = 6 : not recording ;'
expect_reply "record=sideways" "record=sideways" "!record = 8 : 'sideways' is not on, off, nthread, mk6 or a start time such as 2026y327d18h30m00s ;"
expect_reply "record=on with a slash in the name" "record=on:a/b" '!record = 8 : record = on .*'
expect_reply "record=on with too many fields" "record=on:a:b:c:d" '!record = 8 : record = on .*'
expect_reply "unknown keyword" "frobnicate=1" '!frobnicate = 7 : no such keyword ;'
expect_reply "unknown query" "frobnicate?" '!frobnicate \? 7 : no such keyword ;'

recfs-play -q --gen vdif --sequence --rate 20M --duration 20 --udp "127.0.0.1:$port" &
ppid=$!
cleanup_add "kill $ppid"
sleep 0.5
expect_reply "record=on:no0001:r41234:Mh" "record=on:no0001:r41234:Mh" '!record = 0 ;'
for i in 1 2 3; do
	sleep 0.3
	expect_reply "record? poll $i" "record?" '!record \? 0 : on : 1 : r41234_Mh_no0001 : [0-9]+ ;'
done
expect_reply "status? recording" "status?" '!status \? 0 : 0x00000059 ;'
expect_reply "record=on while recording conflicts" "record=on:no0002" "!record = 6 : already recording scan 'r41234_Mh_no0001' ;"
expect_reply "record=off" "record=off" '!record = 1 ;'
expect_reply "record? off" "record?" '!record \? 0 : off ;'
kill "$ppid" 2>/dev/null; wait "$ppid" 2>/dev/null
sc=$(scan_checked)
len=$(recfs ls --json "$PACK" | python3 -c 'import json,sys; print([r["size"] for r in json.load(sys.stdin) if r["name"]=="r41234_Mh_no0001"][0])')
check "scan_check? fields as the FS reads them: scan#, name, VDIF, tracks x threads, start, length, track rate, missing, frame size; then recordings, bytes, lost frames ($sc)" \
	grep -Eqx "!scan_check \\? 0 : 1 : r41234_Mh_no0001 : VDIF : 2 : 20[0-9]{2}y[0-9]{3}d[0-9]{2}h[0-9]{2}m[0-9]{2}\\.[0-9]{4}s : [0-9]+\\.[0-9]{4}s : [0-9.]+ : 0 : 8032 : 1 : $len : 0 ;" <<<"$sc"
expect_reply "scan_set=1" "scan_set=1" '!scan_set = 0 ;'
expect_reply "scan_set? scan# : name : start byte : end byte, as jive5ab" "scan_set?" "!scan_set \\? 0 : 1 : r41234_Mh_no0001 : 0 : $len ;"
expect_reply "scan_set by name" "scan_set=r41234_Mh_no0001" '!scan_set = 0 ;'
expect_reply "scan_set= an unknown scan" "scan_set=7" "!scan_set = 8 : no scan or recording '7' on the pack ;"
expect_reply "scan_set= with jive5ab's offsets" "scan_set=1:+0.1s" '!scan_set = 0 ;'
expect_reply "scan_set? their bytes" "scan_set?" "!scan_set \\? 0 : 1 : r41234_Mh_no0001 : [1-9][0-9]* : $len ;"
expect_reply "scan_set= an offset past the recording's end is refused there, as jive5ab refuses it" "scan_set=1:+1000s" \
	"!scan_set = 8 : scan pointer offset\\(s\\) are out of bound .*"
expect_reply "scan_set= a plain byte number is refused, as jive5ab refuses it" "scan_set=1:100" \
	"!scan_set = 8 : START '100' is not one of jive5ab's offsets \\(relative bytes .*"
expect_reply "scan_set?: the refused ones changed nothing" "scan_set?" "!scan_set \\? 0 : 1 : r41234_Mh_no0001 : [1-9][0-9]* : $len ;"
expect_reply "scan_set= with empty offsets, as the FS sends it" "scan_set = r41234_Mh_no0001 :  :  " '!scan_set = 0 ;'
free=$(recfs info "$PACK" | awk '/^free/{print $2}')
expect_reply "dir_info? recordings, bytes, total (as jive5ab), free" "dir_info?" "!dir_info \\? 0 : 1 : $len : [0-9]+ : [0-9]+ ;"
expect_reply "status? idle again" "status?" '!status \? 0 : 0x00000001 ;'
expect_reply "delete= a recording being... none: an unknown name" "delete=nope" "!delete = 8 : no recording named 'nope' ;"
# recfs ctl, the small client: replies on stdout, exit 0 / 4 / 1
run recfs ctl "$RD_CTL" 'record?' 'scan_set?'
check "recfs ctl: two statements, two replies, exit 0 ($OUT)" \
	test "$RC" = 0 -a "$OUT" = $'!record ? 0 : off ;\n!scan_set ? 0 : 1 : r41234_Mh_no0001 : 0 : '"$len ;"
run recfs ctl "$RD_CTL" 'record=off'
check "recfs ctl: a refusal (rc 6) exits 4 ($OUT)" test "$RC" = 4 -a "$OUT" = '!record = 6 : not recording ;'
run recfs ctl "$RD_CTL" - <<<$'status?\n\nversion?'
check "recfs ctl -: statements from stdin, blank lines skipped" \
	test "$RC" = 0 -a "$(grep -c '^!' <<<"$OUT")" = 2
dead=$(free_port)
run recfs ctl "127.0.0.1:$dead" 'record?'
check "recfs ctl: nothing listening exits 1 naming the address ($OUT)" \
	eval 'test "$RC" = 1 && grep -q "127.0.0.1:$dead: cannot connect" <<<"$OUT"'
stop_recfsd
check "recfsd exits 0" test "$RD_RC" = 0
recfs cat "$PACK" r41234_Mh_no0001 >"$T_DIR/scan.vdif"
run python3 - "$T_DIR/scan.vdif" <<'PY'
import sys
d = open(sys.argv[1], "rb").read()
F = 8032  # gen:vdif frames: the payload starts with the stream's frame serial
assert d and len(d) % F == 0, "length %d" % len(d)
s = [int.from_bytes(d[k + 32:k + 40], "little") for k in range(0, len(d), F)]
bad = [i for i in range(1, len(s)) if s[i] != s[i - 1] + 1]
assert not bad, "serial breaks at frames %s" % bad[:5]
print("%d frames, serials %d..%d" % (len(s), s[0], s[-1]))
PY
check "the scan is whole VDIF frames in sequence ($OUT)" test "$RC" = 0
check "stored loss map: nothing lost" grep -Eq '^r41234_Mh_no0001 .* vdif +0 +0$' <<<"$(recfs ls -l "$PACK")"
finish
