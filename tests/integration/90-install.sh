#!/bin/bash
# make install: programs, man pages, librecfs.a with headers and a .pc file
# that a program outside the tree can build against.
. "$(dirname "$0")/../lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
root=$T_DIR/root
run make -s -C "$top" BUILD="${BUILD:-build}" install DESTDIR="$root" PREFIX=/usr
check "make install succeeds" test "$RC" = 0
for p in sbin/mkfs.recfs sbin/fsck.recfs sbin/mount.recfs sbin/recfs-mount bin/recfs bin/recfs-record bin/recfs-play bin/recfsd; do
	check "installed $p" test -x "$root/usr/$p"
done
for m in man8/mkfs.recfs.8 man8/recfs.8 man8/fsck.recfs.8 man8/recfs-mount.8 man1/recfs-record.1 man1/recfs-play.1 man8/recfsd.8; do
	check "installed man page $m" test -s "$root/usr/share/man/$m"
done
unit=$root/usr/lib/systemd/system/recfsd@.service
check "installed the recfsd@.service unit" test -s "$unit"
check "its paths are the installed programs" \
	eval 'grep -qx "ExecStart=/usr/bin/recfsd \$RECFSD_OPTS \${PACK}" "$unit" && grep -q "/usr/sbin/fsck.recfs -p" "$unit" && ! grep -q "@[A-Z]*@" "$unit"'
check "it waits for recfsd's readiness (Type=notify)" grep -qx "Type=notify" "$unit"
if command -v systemd-analyze >/dev/null; then
	# verified as installed, but pointing at the installed tree's programs
	sed "s|/usr/s\?bin/|$root&|g" "$unit" >"$T_DIR/recfsd@test.service"
	run systemd-analyze verify --man=no "$T_DIR/recfsd@test.service"
	check "systemd-analyze verify: no complaint ($OUT)" test "$RC" = 0 -a -z "$OUT"
fi
check "installed librecfs.a" test -s "$root/usr/lib/librecfs.a"
check "installed the public headers" test -s "$root/usr/include/recfs/recfs.h" -a -s "$root/usr/include/recfs/format.h"
cat >"$T_DIR/user.c" <<'C'
#include <stdio.h>
#include <recfs/recfs.h>
int main(int argc, char **argv)
{
	struct recfs_pack *p;
	struct recfs_pack_info pi;
	if (argc < 2 || recfs_pack_open(argv[1], 0, &p)) {
		fprintf(stderr, "open: %s\n", recfs_errmsg());
		return 1;
	}
	recfs_pack_info(p, &pi);
	printf("%s %u\n", pi.label, pi.members);
	return recfs_pack_close(p);
}
C
export PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_PATH=$root/usr/lib/pkgconfig
san=""
# an ASan build's library needs the sanitizer runtime in the program too
nm "$root/usr/lib/librecfs.a" 2>/dev/null | grep -q __asan_ && san="-fsanitize=address,undefined"
run cc -std=c11 $san -o "$T_DIR/user" "$T_DIR/user.c" $(pkg-config --cflags librecfs) $(pkg-config --static --libs librecfs)
check "a program builds against the installed librecfs.pc ($OUT)" test "$RC" = 0
make_members 2 64M
mkfs.recfs -q -L installed "$PACK"
run "$T_DIR/user" "$PACK"
check "and reads a pack with it" test "$OUT" = "installed 2"
finish
