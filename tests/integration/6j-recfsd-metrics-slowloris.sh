#!/bin/bash
# /metrics under slowloris (issue 15, item 17): 20 clients that trickle a
# request head a byte at a time, from one address and from 20, while 60
# scrapes are parsed with prometheus_client: every scrape succeeds (the
# hand-written server, 16 slots, answered 2 of 60).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/recfsd-lib.sh"
echo "6j: /metrics under slowloris"
need_prometheus

make_members 2 64M
check "mkfs" mkfs.recfs -q -c 256K "$PACK"
check "recfsd with metrics" start_recfsd -i "udp:127.0.0.1:$(free_port)" -m 127.0.0.1:0 --buffer 16M "$PACK"
SL=$(dirname "$0")/../tools/slowloris.py
for src in 127.0.0.2 127.0.0.2-127.0.0.21; do
	out=$($PY3 "$SL" "$RD_MX" 20 "$src" 60 2>"$T_DIR/sl.err")
	check "20 trickling clients from $src: every scrape parsed ($out; $(sort "$T_DIR/sl.err" | uniq -c | head -3))" \
		grep -q '^scrapes 60/60 ' <<<"$out"
	held=$(sed -n 's/.*attackers-connected \([0-9]*\)/\1/p' <<<"$out")
	check "the attack held connections ($held)" test "${held:-0}" -ge 8
done
expect_reply "recfsd still answers its control port" "status?" '!status \? 0 : 0x[0-9a-f]+ .*'
check "405 for POST" test "$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://$RD_MX/metrics")" = 405
check "HEAD: 200, no body" test "$(curl -s -I -o /dev/null -w '%{http_code}:%{size_download}' "http://$RD_MX/metrics")" = 200:0
stop_recfsd
check "recfsd exits 0" test "$RD_RC" = 0
finish
