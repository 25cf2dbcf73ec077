# SPDX-License-Identifier: MIT
"""An fsspec filesystem over a pack: protocol "recfs".

    fsspec.open("recfs://scan1", pack="/dev/sdb,/dev/sdc")
    dask.bytes.read_bytes("recfs://scan*", pack="...", blocksize="64MiB")

A path is a recording name ("recfs://NAME"; a leading "/" is ignored).
Storage options: pack (the members, comma-separated, or a list; default
the environment's RECFS_PACK), verify (default True), degraded (False).
fsspec keeps one instance per set of options in each process, so every
Dask worker assembles the pack once and reads its chunks in parallel.
"""
import errno
import os

from fsspec.spec import AbstractFileSystem

from .format import Error
from .pack import Pack


class RecfsFileSystem(AbstractFileSystem):
    protocol = "recfs"
    root_marker = ""

    def __init__(self, pack=None, verify=True, degraded=False, **kw):
        super().__init__(**kw)
        spec = pack if pack is not None else os.environ.get("RECFS_PACK")
        if not spec:
            raise ValueError("recfs: give the pack's members: pack='m0,m1,...' "
                             "(or set RECFS_PACK)")
        self.pack = Pack(spec, degraded=degraded)
        self.verify = verify

    @classmethod
    def _strip_protocol(cls, path):
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        path = super()._strip_protocol(path)
        return path.lstrip("/")

    def _info(self, d):
        name = d["name"] if "name_hex" not in d else os.fsdecode(bytes.fromhex(d["name_hex"]))
        out = dict(d)
        out.update(name=name, size=d["size"], type="file")
        return out

    def ls(self, path="", detail=True, **kw):
        path = self._strip_protocol(path)
        recs = [self._info(d) for d in self.pack.ls()]
        if path:
            recs = [r for r in recs if r["name"] == path]
            if not recs:
                raise FileNotFoundError(errno.ENOENT, "no recording named '%s'" % path)
        return recs if detail else [r["name"] for r in recs]

    def info(self, path, **kw):
        path = self._strip_protocol(path)
        if path == "":
            return {"name": "", "size": 0, "type": "directory"}
        for r in self.ls("", detail=True):
            if r["name"] == path:
                return r
        raise FileNotFoundError(errno.ENOENT, "no recording named '%s'" % path)

    def _open(self, path, mode="rb", block_size=None, autocommit=True, cache_options=None, **kw):
        if mode != "rb":
            raise PermissionError(errno.EROFS, "recfs: recordings are read-only (mode %r)" % mode)
        try:
            return self.pack.open(self._strip_protocol(path), verify=kw.get("verify", self.verify))
        except Error as e:
            if e.errno == errno.ENOENT:
                raise FileNotFoundError(errno.ENOENT, e.msg) from None
            raise

    def cat_file(self, path, start=None, end=None, **kw):
        with self._open(path) as f:
            size = f.raw.size
            start = 0 if start is None else (start if start >= 0 else max(0, size + start))
            end = size if end is None else (end if end >= 0 else max(0, size + end))
            f.seek(start)
            return f.read(max(0, end - start))

    def ukey(self, path):
        r = self.info(path)
        return "%s:%s:%d" % (self.pack.uuid, r["uid"], r["size"])
