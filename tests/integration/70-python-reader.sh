#!/bin/bash
# 70-python-reader: the pure-Python reader (python/, issue 16) installed
# with pip into a venv in the build tree, run by its pytest suite
# (python/tests/) against packs the C tools make: listings, bytes,
# refusals and info equal recfs's; baseband decodes a recording read
# through it as the source and the mount; fsspec and a parallel fan-out.
# The venv is kept ($BUILD/pyenv) so reruns do not download again.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/mount-lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
case ${BUILD:-build} in /*) B=$BUILD ;; *) B=$ROOT/${BUILD:-build} ;; esac
VENV=$B/pyenv
PY=$VENV/bin/python
echo "70-python-reader: the Python package against the C tools"

# test dependencies from PyPI, once per build tree (dask if it installs)
want="xxhash fsspec baseband pytest setuptools wheel"
if [ "$(cat "$VENV/.deps-ok" 2>/dev/null)" != "$want" ]; then
	rm -rf "$VENV"
	python3 -m venv "$VENV" --system-site-packages &&
		"$VENV/bin/pip" install -q $want &&
		echo "$want" >"$VENV/.deps-ok"
	"$VENV/bin/pip" install -q dask >/dev/null 2>&1 || echo "dask did not install: the fan-out uses concurrent.futures"
fi
check "venv with $want" test "$(cat "$VENV/.deps-ok" 2>/dev/null)" = "$want"
run "$VENV/bin/pip" install -q --no-deps --no-build-isolation --force-reinstall "$ROOT/python"
check "pip install ./python ($OUT)" test "$RC" = 0
(cd "$T_DIR" && "$PY" -c 'import fsspec; assert fsspec.get_filesystem_class("recfs").__module__ == "recfs.fs"')
check "fsspec finds recfs:// by its entry point (recfs not imported)" test $? = 0
run bash -c "cd '$T_DIR' && '$PY' -c 'import recfs, sys; print(recfs.__file__)'"
check "recfs is imported from the venv, not the tree ($OUT)" grep -q "^$VENV/" <<<"$OUT"

# a VDIF recording to decode through the package and through the mount
make_members 3 64M v
mkfs.recfs -q -c 64K -L vdif "$PACK"
recfs-record -q -i gen:vdif --threads 2 --frame-rate 1000 --size $((8032 * 600)) -F vdif "$PACK" vscan
recfs cat "$PACK" vscan >"$T_DIR/vscan.vdif"
M=$T_DIR/mnt
if check "mount the VDIF pack" mount_pack "$PACK" "$M"; then
	export RECFS_TEST_MOUNT=$M
fi
export RECFS_TEST_VDIF_PACK=$PACK RECFS_TEST_VDIF_SRC=$T_DIR/vscan.vdif
export RECFS_BIN RECFS_TEST_ROOT=$ROOT RECFS_TEST_DIR=$T_DIR/py
mkdir -p "$T_DIR/py"

# the suite: one PASS/FAIL line per pytest test.  Its packs are in memory
# when there is room: hundreds of small writes, each flushed, are most of
# its time on a disk (the packs above and the mount are on disk)
PT=$T_DIR/pt
if [ -d /dev/shm ] && [ "$(df -Pk /dev/shm | awk 'NR==2 {print $4}')" -gt $((2 << 20)) ]; then
	PT=$(mktemp -d /dev/shm/recfs-pytest.XXXXXX)
	cleanup_add "rm -rf '$PT'"
fi
(cd "$T_DIR" && "$PY" -m pytest -p no:cacheprovider -q -rA --basetemp="$PT/bt" "$ROOT/python/tests") >"$T_DIR/pytest.log" 2>&1
rc=$?
cat "$T_DIR/pytest.log"
while read -r word id rest; do
	id=${id##*/python/}
	case $word in
	PASSED) pass "pytest $id" ;;
	FAILED | ERROR) fail "pytest $id $rest" ;;
	esac
done < <(grep -E '^(PASSED|FAILED|ERROR) ' "$T_DIR/pytest.log")
check "pytest exit status ($rc)" test "$rc" = 0
finish
