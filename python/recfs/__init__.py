# SPDX-License-Identifier: MIT
"""recfs: read recfs recording packs from Python, without FUSE.

    import recfs
    with recfs.Pack("/dev/sdb,/dev/sdc") as pack:
        for r in pack.ls():
            print(r["name"], r["size"], r["frames_lost"])
        with pack.open("scan1") as f:      # seekable, read-only, checksums verified
            data = f.read(1 << 20)

fsspec (so pandas, xarray, Dask): fsspec.open("recfs://scan1", pack="/dev/sdb,/dev/sdc").
"""
from .format import ChecksumError, Error
from .pack import Pack

__version__ = "0.1.0"
__all__ = ["Pack", "Error", "ChecksumError", "open_pack"]


def open_pack(members, degraded=False):
    """Pack(members, degraded)"""
    return Pack(members, degraded=degraded)


try:  # the protocol works without the entry point too (e.g. an uninstalled tree)
    import fsspec as _fsspec
except ImportError:  # fsspec is optional
    _fsspec = None
if _fsspec is not None:
    _fsspec.register_implementation("recfs", "recfs.fs.RecfsFileSystem", clobber=True)
