# SPDX-License-Identifier: MIT
"""The package's listing, bytes and refusals equal the C tools' (FORMAT.md)."""
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import time

import pytest

import recfs
from conftest import (BIN, HELPER, ROOT, agree, cli, cmsg, members, mkfs, py_cat, src,
                      twrite, tool)

SIZES = [64 << 10 << k for k in range(11)]   # every chunk size mkfs offers


@pytest.mark.parametrize("k", range(len(SIZES)))
def test_geometry(tmp_path, k):
    """every chunk size; 1..7 members; odd lengths"""
    cs = SIZES[k]
    n = 1 + k % 7 if cs < 8 << 20 else 1 + k % 2
    rows = 6 if cs < 8 << 20 else 3
    size = max(cs, 1 << 20) + rows * cs + (1 << 20)
    spec = members(tmp_path, n, size)
    mkfs(spec, "-c", str(cs), "-n", "64")
    lens = [0, 1, cs - 1, cs * n + 1] if cs < 8 << 20 else [0, 1, cs + 3]
    if cs < 8 << 20:
        lens.append(2 * cs * n - 4097)
    for i, ln in enumerate(lens):
        s = src(tmp_path, "r%d" % i, ln)
        twrite(*(["--size-hint", "1"] if ln == 0 else []), spec, "r%d" % i, s)
    p = agree(spec)
    assert [e["size"] for e in p.ls()] == lens
    # a member order other than mkfs's
    order = spec.split(",")
    random.Random(k).shuffle(order)
    q = recfs.Pack(order)
    for i, ln in enumerate(lens):
        with q.open("r%d" % i) as f, open(os.path.join(tmp_path, "src-r%d" % i), "rb") as g:
            assert f.read() == g.read()


def test_thousand(tmp_path):
    spec = members(tmp_path, 2, 80 << 20)
    mkfs(spec, "-c", "64K", "-n", "1200")
    twrite("--many", "1000", "--bytes", "70001", spec, "rec")
    p = agree(spec, cat=False)
    ls = p.ls()
    assert len(ls) == 1000
    for d in ls[::97]:
        c = tool("recfs", "cat", spec, d["name"])
        assert c.returncode == 0 and py_cat(p, d["name"]) == (c.stdout, None)


def test_deleted_and_reused(tmp_path):
    spec = members(tmp_path, 3, 64 << 20)
    mkfs(spec, "-c", "64K")
    for name, ln in [("a", 500000), ("b", 1300000), ("c", 70000), ("d", 3 << 20)]:
        twrite(spec, name, src(tmp_path, name, ln))
    tool("recfs", "rm", spec, "b", check=True)
    tool("recfs", "rm", spec, "d", check=True)
    twrite(spec, "e", src(tmp_path, "e", 400000))      # in b's rows, over b's slots
    twrite(spec, "b", src(tmp_path, "b2", 123457))     # b's name again
    p = agree(spec)
    assert [d["name"] for d in p.ls()] == ["a", "e", "c", "b"]   # directory order
    with p.open("b") as f:
        assert f.read() == open(os.path.join(tmp_path, "src-b2"), "rb").read()


def test_names(tmp_path):
    spec = members(tmp_path, 2, 64 << 20)
    mkfs(spec, "-c", "64K")
    s = src(tmp_path, "x", 99999)
    names = [b"caf\xc3\xa9 \xff", b"\xe2\x82a", b"tab\there", b"back\\slash\x7f", b"*?[glob]",
             b"x" * 255, b"\xed\xa0\x80 surrogate", b"\xf4\x90\x80\x80"]
    for n in names:
        twrite(spec, n, s)
    p = agree(spec)
    data = open(s, "rb").read()
    for d, n in zip(p.ls(), names):
        assert d.get("name_hex", n.hex()) == n.hex()
        # by bytes, by str (surrogateescape) and by the listing's dict
        for key in (n, os.fsdecode(n), d):
            with p.open(key) as f:
                assert f.read() == data
    # python -m recfs ls prints names as recfs ls does
    r, c = cli("ls", spec), tool("recfs", "ls", spec)
    assert r.stdout == c.stdout and r.returncode == c.returncode == 0
    r, c = cli("ls", "-l", spec), tool("recfs", "ls", "-l", spec)
    assert r.stdout == c.stdout


def test_crashed_before_and_after_fsck(tmp_path):
    spec = members(tmp_path, 2, 64 << 20)
    mkfs(spec, "-c", "64K")
    s = src(tmp_path, "s", 1000003)
    twrite(spec, "sealed", s)
    twrite("--open", "--sync-every", "65536", spec, "crashed", s)
    p = agree(spec)
    assert {d["name"]: d["state"] for d in p.ls()} == {"sealed": "sealed", "crashed": "recording"}
    r = tool("fsck.recfs", "-y", spec)
    assert r.returncode in (0, 1), r.stdout
    p = agree(spec)
    assert {d["name"]: d["state"] for d in p.ls()} == {"sealed": "sealed", "crashed": "sealed"}


def test_live_recording_grows_on_reopen(tmp_path):
    spec = members(tmp_path, 2, 64 << 20)
    mkfs(spec, "-c", "64K")
    s = src(tmp_path, "live", 1500000)
    w = subprocess.Popen([os.path.join(BIN, "..", "tests", "recfs-testwrite"), "--sync-every",
                          "100000", "--pace-ms", "100", spec, "live", s])
    try:
        p = None
        for _ in range(400):            # until the entry is there
            try:
                p = recfs.Pack(spec)
                f1 = p.open("live")
                break
            except recfs.Error:
                time.sleep(0.025)
        assert p is not None
        n1 = f1.raw.size
        data = open(s, "rb").read()
        assert f1.read() == data[:n1]
        for _ in range(800):
            f2 = p.open("live")
            if f2.raw.size > n1:
                break
            time.sleep(0.025)
        assert f2.raw.size > n1, "re-open sees the later commits"
        assert f2.read() == data[:f2.raw.size]
        f1.seek(0)
        assert len(f1.read()) == n1, "an open file keeps the length it was opened with"
    finally:
        w.wait(timeout=60)
    assert w.returncode == 0
    agree(spec)


def test_vdif_loss_maps(tmp_path):
    spec = members(tmp_path, 2, 64 << 20)
    mkfs(spec, "-c", "64K")
    s = src(tmp_path, "v", 8032 * 50)
    twrite("--vdif", "8032", "--source", "udp:0.0.0.0:5000", "--packets", "90",
              "--dropped", "2", "--frames-lost", "7", "--gap", "8032:3:0", "--gap", "80320:4:1",
              spec, "two", s)
    gaps = []
    for i in range(40):
        gaps += ["--gap", "%d:%d:%d" % (8032 * (i * i + 1), i + 1, i % 3)]
    twrite("--vdif", "8032", "--source", b"udp:\xff\xfe", "--frames-lost", "999", *gaps,
              spec, "many", s)
    p = agree(spec)
    d = {x["name"]: x for x in p.ls()}
    assert d["two"]["gaps"] == [{"offset": 8032, "frames": 3, "thread": 0},
                                {"offset": 80320, "frames": 4, "thread": 1}]
    assert d["many"]["gaps_coalesced"] and len(d["many"]["gaps"]) == 32
    assert d["many"]["source_hex"] == b"udp:\xff\xfe".hex()
    # an unknown format code; a source of 64 bytes, no NUL (63 shown)
    tool(HELPER, "set-entry", spec, "two", "format", "7", check=True)
    tool(HELPER, "set-entry", spec, "two", "source", "s" * 64, check=True)
    p = agree(spec)
    d = {x["name"]: x for x in p.ls()}
    assert d["two"]["format"] == "unknown" and d["two"]["source"] == "s" * 63


# ------------------------------------------------------------ crafted damage
def _sb(path):
    with open(path, "rb") as f:
        b = f.read(4096)
    return dict(zip(["csum_off", "data_off"], struct.unpack_from("<QxxxxxxxxQ", b, 128)))


def _poke(path, off, b):
    with open(path, "r+b") as f:
        f.seek(off)
        f.write(b)


def test_damage(tmp_path):
    spec = members(tmp_path, 3, 64 << 20)
    mkfs(spec, "-c", "64K", "-L", "dmg")
    m = spec.split(",")
    s = src(tmp_path, "a", 1000000)
    twrite(spec, "a", s)
    twrite(spec, "b", src(tmp_path, "b", 300000))
    g = _sb(m[0])
    orig = [open(x, "rb").read() for x in m]

    def restore():
        for x, o in zip(m, orig):
            with open(x, "wb") as f:
                f.write(o)

    # a flipped data byte in chunk 4 (member 1, row 1): cat stops there
    _poke(m[1], g["data_off"] + 65536 + 100, b"\xee")
    agree(spec)
    p = recfs.Pack(spec)
    with pytest.raises(recfs.ChecksumError) as e:
        p.open("a").read()
    assert (e.value.chunk, e.value.start, e.value.end) == (4, 4 * 65536, 5 * 65536)
    with p.open("a") as f:                 # what is before it reads
        f.seek(65536 * 3 + 7)
        assert f.read(65536 - 7) == open(s, "rb").read()[65536 * 3 + 7:65536 * 4]
    assert cli("verify", spec).returncode == 1
    restore()
    # chunk 2's slot damaged on one member: the others' replicas do
    _poke(m[0], g["csum_off"] + 16 * 2, b"\0" * 8)
    agree(spec)
    # ... and on every member: mismatch named
    for x in m:
        _poke(x, g["csum_off"] + 16 * 2, b"\0" * 8)
    agree(spec)
    # the slot's length wrong everywhere: "damaged"
    for x in m:
        _poke(x, g["csum_off"] + 16 * 2 + 8, b"\1\0\0\0")
    agree(spec)
    restore()
    # the tail checksum lives in the entry: a flipped byte in the last chunk
    _poke(m[15 % 3], g["data_off"] + 5 * 65536 + 1000000 % 65536 - 1, b"\x00")
    agree(spec)
    restore()
    # a primary superblock destroyed: the backup serves
    _poke(m[2], 0, b"\0" * 4096)
    agree(spec)
    restore()
    assert cli("verify", spec).returncode == 0


def test_refusals(tmp_path):
    spec = members(tmp_path, 4, 64 << 20)
    mkfs(spec, "-c", "64K", "-L", "ref")
    twrite(spec, "a", src(tmp_path, "a", 700000))
    m = spec.split(",")
    other = members(tmp_path, 2, 64 << 20, "f")
    mkfs(other, "-L", "other")
    os.symlink(m[1], os.path.join(tmp_path, "link"))
    notm = src(tmp_path, "junk", 1 << 20)
    trunc = os.path.join(tmp_path, "t3.img")
    shutil.copyfile(m[3], trunc)
    os.truncate(trunc, 32 << 20)
    bad = [
        ",".join(m[:2] + m[3:]),                     # missing
        ",".join(m + [m[1]]),                        # named twice
        ",".join(m[:3] + [os.path.join(tmp_path, "link")] + m[3:]),   # the same member
        ",".join(m[:2] + [other.split(",")[1]] + m[3:]),              # foreign
        ",".join(m[:3] + [notm]),                    # not a member
        ",".join(m[:3] + [os.path.join(tmp_path, "nothere")]),
        ",".join(m[:3] + [trunc]),                   # truncated
        ",".join(m[:3] + [str(tmp_path)]),           # a folder
        "", m[0] + ",",
    ]
    for s in bad:
        r = tool("recfs", "ls", "--json", s)
        assert r.returncode != 0, s
        agree(s)                 # the same refusal, and info's degraded view
    agree(",".join(["m0.img"] * 65), cwd=str(tmp_path))   # short: C messages stop at 511 bytes
    # degraded: the missing member's chunks are named
    p = recfs.Pack(",".join(m[:2] + m[3:]), degraded=True)
    assert p.present == 3
    with pytest.raises(recfs.Error, match=r"'a': bytes 131072-196607 are on missing member 2"):
        p.open("a").read()
    # inconsistent: another label on one member, checksums made right
    tool(HELPER, "set-super", m[2], "primary", "label", "xxx", check=True)
    agree(spec)


def test_cli(tmp_path):
    spec = members(tmp_path, 2, 64 << 20)
    mkfs(spec, "-c", "64K")
    s = src(tmp_path, "a", 333333)
    twrite(spec, "a", s)
    r = cli("ls", "--json", spec)
    assert json.loads(r.stdout) == json.loads(tool("recfs", "ls", "--json", spec).stdout)
    for args in (["--offset", "65535", "--length", "131074"], ["--offset", "333000"], []):
        assert cli("cat", *args, spec, "a").stdout == tool("recfs", "cat", *args, spec, "a").stdout
    for args in (["--offset", "400000"], ["--offset", "x1"]):
        r, c = cli("cat", *args, spec, "a"), tool("recfs", "cat", *args, spec, "a")
        assert r.returncode == c.returncode == 1
        assert cmsg(r.stderr).split(":")[0] == cmsg(c.stderr).split(":")[0]
    r, c = cli("cat", spec, "nope"), tool("recfs", "cat", spec, "nope")
    assert r.stderr == c.stderr and r.returncode == 1
    r = cli("verify", spec)
    assert r.returncode == 0 and b"a: 333333 bytes verified" in r.stdout
    # standard output onto a member: refused, the member unchanged
    m1 = spec.split(",")[1]
    before = open(m1, "rb").read()
    for args in (["cat", spec, "a"], ["ls", spec]):
        with open(m1, "r+b") as out:
            r = subprocess.run([os.path.join(BIN, "recfs")] + args, stdout=out, stderr=subprocess.PIPE)
        with open(m1, "r+b") as out:
            q = subprocess.run([sys.executable, "-m", "recfs"] + args, stdout=out, stderr=subprocess.PIPE)
        assert r.returncode == q.returncode == 1 and q.stderr == r.stderr, (r.stderr, q.stderr)
    assert open(m1, "rb").read() == before


def test_random_reads(tmp_path):
    spec = members(tmp_path, 5, 64 << 20)
    mkfs(spec, "-c", "64K")
    s = src(tmp_path, "a", 7 * 65536 * 5 + 12345)
    twrite(spec, "a", s)
    data = open(s, "rb").read()
    p = recfs.Pack(spec)
    rnd = random.Random(1)
    with p.open("a") as f:
        assert f.seekable() and f.readable() and not f.writable()
        for _ in range(300):
            off = rnd.randrange(len(data) + 10)
            n = rnd.choice([1, 100, 4096, 65535, 65536, 65537, 300000])
            f.seek(off)
            assert f.read(n) == data[off:off + n]
            assert f.tell() == min(off + n, max(off, len(data))) or off > len(data)
        f.seek(-10, 2)
        assert f.read() == data[-10:]
        import numpy as np
        a = np.empty(1000, dtype=np.uint8)
        f.seek(65530)
        assert f.readinto(a) == 1000 and a.tobytes() == data[65530:66530]


FSCK_CASES = sorted(d for d in os.listdir(os.path.join(ROOT, "tests", "fsck"))
                    if os.path.isfile(os.path.join(ROOT, "tests", "fsck", d, "script")))


@pytest.mark.parametrize("case", FSCK_CASES)
def test_fsck_case(tmp_path, case):
    """every tests/fsck case's pack, as its script leaves it and after fsck -y"""
    here = os.path.join(ROOT, "tests", "fsck")
    env = dict(os.environ, HELPER=os.path.abspath(HELPER), RECFS_BIN=BIN)
    r = subprocess.run(["bash", "-c", '. "$0/common.sh" && . "$0/%s/script"' % case, here],
                       cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert r.returncode == 0, r.stdout.decode()
    args = "m0.img,m1.img"
    if os.path.exists(os.path.join(tmp_path, "args")):
        args = ",".join(open(os.path.join(tmp_path, "args")).read().split())
    agree(args, cwd=str(tmp_path))
    opts = open(os.path.join(here, case, "opts")).read().split() \
        if os.path.exists(os.path.join(here, case, "opts")) else []
    tool("fsck.recfs", "-y", *opts, args, cwd=str(tmp_path))
    agree(args, cwd=str(tmp_path))
