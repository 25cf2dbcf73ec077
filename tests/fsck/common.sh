# Sourced by every tests/fsck case script (run in the case's own folder).
# A case builds m0.img, m1.img... and may write the fsck arguments to ./args
# (default m0.img,m1.img).
set -e
HELPER=${HELPER:?}
UUID=0123456789abcdef0123456789abcdef
OTHER_UUID=fedcba9876543210fedcba9876543210
PACK=m0.img,m1.img

# fresh [MEMBERS] [SIZE]: a new pack, 64 KiB chunks, 16 directory entries
fresh() {
	local n=${1:-2} size=${2:-16M} i spec=""
	for ((i = 0; i < n; i++)); do
		rm -f "m$i.img"
		truncate -s "$size" "m$i.img"
		spec="$spec,m$i.img"
	done
	PACK=${spec#,}
	"$HELPER" mkfs "$PACK" 64K 16 fsck-test "$UUID"
}

# write NAME BYTES [STEP] [nosync|noseal]
write() { "$HELPER" write "$PACK" "$1" "$2" "${3:-$2}" ${4:-}; }

# the usual contents: three sealed recordings
three() {
	write scan-a 300000 100000
	write scan-b 1000000 250000
	write scan-c 70000
}

# poke FILE OFFSET HEXBYTES: overwrite bytes in place
poke() {
	printf "$(sed 's/\(..\)/\\x\1/g' <<<"$3")" |
		dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# where WHAT [NAME [CHUNK]]: "PATH OFFSET" lines
where() { "$HELPER" where "$PACK" "$@"; }

# backup_off FILE: the backup superblock's offset
backup_off() { echo $(( $(stat -c %s "$1") / 4096 * 4096 - 4096 )); }
