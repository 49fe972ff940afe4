#!/usr/bin/python3
"""Checks that NumPy reads the files ember wrote exactly as the originals.

usage: check_numpy_roundtrip.py FIXTURE_DIR EMBER_DIR

EMBER_DIR holds, for each fixture NAME.npy in FIXTURE_DIR, a file of the
same name that ember loaded from the fixture and saved again, plus
stored.npz / deflated.npz holding all of them (members named NAME). Each
must have the fixture's dtype (as NumPy normalises it: ember writes its own
byte order), shape, memory order and values, and each .npy must be
byte-identical to numpy.save of the fixture's array in native byte order.
Run by tests/lua/npy_spec.lua when /usr/bin/python3 has NumPy.
"""
import io
import os
import sys
import numpy as np

fix, out = sys.argv[1], sys.argv[2]
failures = []

def same(name, ref, got):
    ref = ref.astype(ref.dtype.newbyteorder("="))
    if got.dtype != ref.dtype or got.shape != ref.shape:
        failures.append("%s: %s %s vs %s %s" % (name, got.dtype, got.shape, ref.dtype, ref.shape))
    elif not np.array_equal(got, ref, equal_nan=ref.dtype.kind == "f"):
        failures.append("%s: values differ" % name)
    elif ref.ndim > 1 and got.flags.f_contiguous != ref.flags.f_contiguous:
        failures.append("%s: memory order differs" % name)

refs = {}
for f in sorted(os.listdir(out)):
    if not f.endswith(".npy"):
        continue
    ref = np.load(os.path.join(fix, f))
    refs[f[:-4]] = ref
    got = np.load(os.path.join(out, f))
    same(f, ref, got)
    buf = io.BytesIO()
    np.save(buf, ref.astype(ref.dtype.newbyteorder("=")))
    with open(os.path.join(out, f), "rb") as fh:
        if fh.read() != buf.getvalue():
            failures.append("%s: bytes differ from numpy.save" % f)

for arch in ("stored.npz", "deflated.npz"):
    with np.load(os.path.join(out, arch)) as z:
        if sorted(z.files) != sorted(refs):
            failures.append("%s: members %s" % (arch, z.files))
        for k in z.files:
            same("%s:%s" % (arch, k), refs[k], z[k])

if not refs:
    failures.append("no files to check")
for f in failures:
    print("FAIL", f)
print("%d files checked, %d failures" % (len(refs), len(failures)))
sys.exit(1 if failures else 0)
