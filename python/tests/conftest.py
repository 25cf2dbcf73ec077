# SPDX-License-Identifier: MIT
"""Helpers: the C tools ($RECFS_BIN) as the reference the package must equal."""
import json
import os
import subprocess
import sys

import pytest

import recfs

BIN = os.environ.get("RECFS_BIN", "")
ROOT = os.environ.get("RECFS_TEST_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
TESTWRITE = os.path.join(BIN, "..", "tests", "recfs-testwrite")
HELPER = os.path.join(BIN, "..", "tests", "fsck-helper")

if not BIN or not os.path.exists(os.path.join(BIN, "recfs")):
    pytest.skip("RECFS_BIN (the C tools) not set: run through tests/integration/70-python-reader.sh",
                allow_module_level=True)


def tool(name, *args, check=False, cwd=None, env=None):
    path = name if name.startswith("/") else os.path.join(BIN, name)
    r = subprocess.run([path] + [os.fsencode(a) if isinstance(a, str) else a for a in args],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env)
    if check and r.returncode:
        raise AssertionError("%s %s: exit %d: %s" % (name, args, r.returncode, r.stderr.decode()))
    return r


def twrite(*args, **kw):
    return tool(TESTWRITE, *args, check=True, **kw)


def cmsg(stderr):
    """a C tool's one-line message without the "recfs: " prefix"""
    line = stderr.decode("utf-8", "surrogateescape").splitlines()
    line = [x for x in line if not x.startswith("recfs: warning:")]
    return line[0].split(": ", 1)[1] if line else ""


def members(d, n, size, prefix="m"):
    paths = []
    for i in range(n):
        p = os.path.join(str(d), "%s%d.img" % (prefix, i))
        with open(p, "wb") as f:
            f.truncate(size)
        paths.append(p)
    return ",".join(paths)


def mkfs(spec, *opts):
    tool("mkfs.recfs", "-q", "-f", *opts, spec, check=True)


def src(d, name, n, seed=0):
    p = os.path.join(str(d), "src-" + name)
    with open(p, "wb") as f:
        f.write(os.urandom(n))
    return p


def py_cat(pack, name, verify=True):
    """what `recfs cat` would write, and its error (or None): whole chunks
    until the first bad one"""
    f = pack.open(name, verify=verify, buffering=0)
    out = bytearray()
    buf = bytearray(max(pack.geom.chunk_size, 4 << 20))
    while True:
        try:
            n = f.readinto(buf)
        except recfs.Error as e:
            return bytes(out), e.msg
        if not n:
            return bytes(out), None
        out += memoryview(buf)[:n]


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "recfs"] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, cwd=cwd)


def info_inproc(spec, cwd=None):
    """python -m recfs info, in this process (a new interpreter per pack is slow)"""
    import contextlib
    import io
    from recfs.__main__ import main
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    try:
        if cwd:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(["info", spec])
    finally:
        os.chdir(old)
    return rc, out.getvalue(), err.getvalue()


def agree(spec, cat=True, info=True, cwd=None):
    """The package sees what the C tools see: the same refusal, or the same
    listing (recfs ls --json), the same bytes and errors (recfs cat, with and
    without verification) and the same `info`.  Returns the Pack or None."""
    r = tool("recfs", "ls", "--json", spec, cwd=cwd)
    if info:
        ci = tool("recfs", "info", spec, cwd=cwd)
        rc, out, err = info_inproc(spec, cwd)
        assert (rc, out) == (ci.returncode, ci.stdout.decode("utf-8", "surrogateescape")), \
            err + ci.stderr.decode()
        if ci.returncode:
            assert err == ci.stderr.decode("utf-8", "surrogateescape")
    old = os.getcwd()
    if cwd:
        os.chdir(cwd)
    try:
        if r.returncode:
            with pytest.raises(recfs.Error) as e:
                recfs.Pack(spec)
            assert e.value.msg == cmsg(r.stderr)
            return None
        p = recfs.Pack(spec)
        want = json.loads(r.stdout)
        assert p.ls() == want
        warns = [x for x in r.stderr.decode("utf-8", "surrogateescape").splitlines()]
        assert ["recfs: " + w for w in p.dup_uid_warnings()] == warns
        if cat:
            for e in p.entries():
                for verify in (True, False):
                    c = tool("recfs", "cat", *([] if verify else ["--no-verify"]), spec, e.name,
                             cwd=cwd)
                    data, err = py_cat(p, e.name, verify)
                    assert data == c.stdout, (e.name, verify, len(data), len(c.stdout))
                    assert err == (cmsg(c.stderr) if c.returncode else None), e.name
        return p
    finally:
        os.chdir(old)
