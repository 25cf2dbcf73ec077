#!/bin/bash
# make demo: the main job on an embedded default pack of 4 file-backed
# members in a temporary folder (no real disks): format, record a stream,
# inspect, mount, check the data through the mount with sha256sum, unmount.
# DEMO_DIR=... keeps the pack there; DEMO_MB sets the recording size.
set -eu
cd "$(dirname "$0")/.."
BIN=$PWD/${BUILD:-build}/bin
export PATH=$BIN:$PATH
MB=${DEMO_MB:-256}
dir=${DEMO_DIR:-$(mktemp -d /var/tmp/recfs-demo.XXXXXX)}
mnt=$dir/mnt
mounted=0
cleanup() {
	[ "$mounted" = 1 ] && fusermount3 -u "$mnt" 2>/dev/null || true
	[ -z "${DEMO_DIR:-}" ] && rm -rf "$dir"
}
trap cleanup EXIT
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show() { printf '$ %s\n' "$*"; "$@"; }

step "4 members of 1 GiB each (sparse files) in $dir"
for i in 0 1 2 3; do truncate -s 1G "$dir/disk$i.img"; done
PACK=$dir/disk0.img,$dir/disk1.img,$dir/disk2.img,$dir/disk3.img

step "format the pack"
show mkfs.recfs -L demo "$PACK"

step "record a ${MB} MiB stream from a file (any byte stream works; UDP too)"
head -c $((MB << 20)) /dev/urandom >"$dir/source.dat"
if [ -x "$BIN/recfs-record" ]; then
	show recfs-record -q --input "file:$dir/source.dat" "$PACK" scan001
	step "and one from the built-in VDIF generator, 2 seconds at 64 MB/s"
	show recfs-record -q --input gen:vdif --format vdif --rate 64000000 --duration 2 "$PACK" vdif001
else
	echo "(recfs-record is not built yet)"
fi

step "what is on the pack"
show recfs info "$PACK"
show recfs ls -l "$PACK"

if [ -x "$BIN/recfs-mount" ] && [ -x "$BIN/recfs-record" ]; then
	step "mount it read-only: every recording is an ordinary file"
	mkdir -p "$mnt"
	show recfs-mount "$PACK" "$mnt"
	mounted=1
	show ls -l "$mnt"
	step "check the data through the mount"
	a=$(sha256sum <"$dir/source.dat" | cut -d' ' -f1)
	b=$(sha256sum <"$mnt/scan001" | cut -d' ' -f1)
	echo "source:        $a"
	echo "through mount: $b"
	[ "$a" = "$b" ] && echo "identical" || { echo "DIFFERENT" >&2; exit 1; }
	show getfattr -d "$mnt/vdif001"
	step "unmount"
	show fusermount3 -u "$mnt"
	mounted=0
else
	step "read it back"
	a=$(sha256sum <"$dir/source.dat" | cut -d' ' -f1)
	if recfs ls "$PACK" | grep -qx scan001; then
		b=$(recfs cat "$PACK" scan001 | sha256sum | cut -d' ' -f1)
		echo "source: $a"; echo "cat:    $b"
		[ "$a" = "$b" ]
	fi
fi
step "done"
