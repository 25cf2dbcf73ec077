# SPDX-License-Identifier: MIT
"""fsspec (open, seek, read; a parallel fan-out; dask if installed) and baseband."""
import concurrent.futures
import os

import fsspec
import numpy as np
import pytest

import recfs
from conftest import members, mkfs, src, twrite


@pytest.fixture(scope="module")
def scans(tmp_path_factory):
    d = tmp_path_factory.mktemp("fs")
    spec = members(d, 4, 64 << 20)
    mkfs(spec, "-c", "64K")
    data = {}
    for i in range(6):
        n = "scan%d" % i
        data[n] = open(src(d, n, 200000 * i + 4097), "rb").read()
        twrite(spec, n, os.path.join(d, "src-" + n))
    return spec, data


def test_fsspec_open_seek_read(scans):
    spec, data = scans
    with fsspec.open("recfs://scan3", pack=spec) as f:
        f.seek(123457)
        assert f.read(70000) == data["scan3"][123457:193457]
        f.seek(-5, os.SEEK_END)
        assert f.read() == data["scan3"][-5:]
    fs = fsspec.filesystem("recfs", pack=spec)
    assert sorted(fs.ls("", detail=False)) == sorted(data)
    assert fs.info("scan2")["size"] == len(data["scan2"])
    assert fs.cat_file("recfs://scan4", start=10, end=100) == data["scan4"][10:100]
    assert sorted(fs.glob("scan[12]")) == ["scan1", "scan2"]
    with pytest.raises(FileNotFoundError):
        fs.open("nope")
    with pytest.raises(PermissionError):
        fs.open("scan1", "wb")


def test_fanout(scans):
    """several recordings read at once, as Dask workers would"""
    spec, data = scans
    fs = fsspec.filesystem("recfs", pack=spec)

    def get(name):
        with fs.open(name) as f:
            return name, f.read()

    with concurrent.futures.ThreadPoolExecutor(6) as ex:
        got = dict(ex.map(get, fs.ls("", detail=False)))
    assert got == data


def test_dask_read_bytes(scans):
    dask = pytest.importorskip("dask")
    from dask.bytes import read_bytes
    spec, data = scans
    _, blocks = read_bytes("recfs://scan*", pack=spec, blocksize=100000, delimiter=None,
                           sample=False)
    got = dask.compute(*[dask.delayed(b"".join)(b) for b in blocks], scheduler="threads")
    names = sorted(data)
    assert [len(g) for g in got] == [len(data[n]) for n in names]
    assert list(got) == [data[n] for n in names]


def test_baseband_vdif():
    spec = os.environ.get("RECFS_TEST_VDIF_PACK")
    if not spec:
        pytest.skip("no VDIF pack (run through 70-python-reader.sh)")
    import astropy.units as u
    from baseband import vdif
    p = recfs.Pack(spec)
    with p.open("vscan") as raw:
        hdr = vdif.VDIFHeader.fromfile(raw)
    # recfs-record -i gen:vdif --frame-rate 1000: too short to detect the rate
    rate = 1000 * hdr.samples_per_frame * u.Hz
    with p.open("vscan") as raw, vdif.open(raw, "rs", sample_rate=rate) as fh:
        ours = fh.read()
    with vdif.open(os.environ["RECFS_TEST_VDIF_SRC"], "rs", sample_rate=rate) as fh:
        ref = fh.read()
    assert ours.shape == ref.shape and ours.shape[0] > 0
    assert np.array_equal(ours, ref)
    assert hdr.frame_nbytes == 8032
    m = os.environ.get("RECFS_TEST_MOUNT")
    if m:
        with vdif.open(os.path.join(m, "vscan"), "rs", sample_rate=rate) as fh:
            assert np.array_equal(fh.read(), ours)
