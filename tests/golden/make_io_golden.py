"""Golden data for `mx.io.CSVIter`, `mx.io.MNISTIter` and `mx.recordio` from MXNet 1.9.1.

Run from the repository root with the MXNet venv:

    MXNET_SUBGRAPH_BACKEND=NONE /work/mxvenv/bin/python tests/golden/make_io_golden.py

Writes tests/golden/io/:

- the inputs: `mnist-images-idx3-ubyte`, `mnist-labels-idx1-ubyte` (11 images of 4x3),
  `*.csv` and `csvdir/` (see `write_inputs`);
- `iters.json`: for each case of `CSV_CASES` and `MNIST_CASES`, MXNet's provide_data and
  provide_label and every batch of every epoch (data, label, pad, index), or that MXNet
  refused the case; `mnist_big_shuffle`: the order MXNet's shuffle gives 70,000 images
  (made by `big_mnist`, not committed), as a sha256 and its first entries;
- `records.rec` (MXRecordIO), `indexed.rec` + `indexed.idx` (MXIndexedRecordIO, int keys),
  `strkeys.rec` + `strkeys.idx` (str keys), written by MXNet from `record_payloads()`;
- `recordio.json`: the payloads, `tell()` after each `write_idx`, and `pack` / `unpack`
  of `PACK_CASES`.

Everything is deterministic: regenerating rewrites every file byte for byte. The input
writers and case tables import only numpy; tests/test_io_iters.py and
tests/test_recordio.py use them.
"""
import hashlib
import json
import os
import re
import shutil
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "io")
MAGIC = struct.pack("<I", 0xCED7230A)
EPOCHS = 3


def write_idx_images(path, images):
    """An MNIST idx3 file: magic 2051, count, rows, cols (big-endian int32), then uint8 pixels."""
    n, rows, cols = images.shape
    with open(path, "wb") as f:
        f.write(struct.pack(">iiii", 2051, n, rows, cols))
        f.write(np.ascontiguousarray(images, np.uint8).tobytes())


def write_idx_labels(path, labels):
    """An MNIST idx1 file: magic 2049, count (big-endian int32), then uint8 labels."""
    labels = np.asarray(labels, np.uint8)
    with open(path, "wb") as f:
        f.write(struct.pack(">ii", 2049, labels.size))
        f.write(labels.tobytes())


def mnist_images():
    """11 images of 4x3; pixel 0 of image i is i (its id), image 0 holds 255."""
    rng = np.random.RandomState(3)
    img = rng.randint(0, 256, (11, 4, 3)).astype(np.uint8)
    img[:, 0, 0] = np.arange(11)
    img[0, 1, 1] = 255
    return img


def big_mnist(folder, n=70000):
    """n images of 1x3 whose pixels spell their index (24 bits): the shuffle order is readable."""
    ids = np.arange(n)
    img = np.stack([ids & 255, (ids >> 8) & 255, (ids >> 16) & 255], 1).astype(np.uint8)
    write_idx_images(os.path.join(folder, "big-images"), img.reshape(n, 1, 3))
    write_idx_labels(os.path.join(folder, "big-labels"), ids % 10)
    return os.path.join(folder, "big-images"), os.path.join(folder, "big-labels")


def big_order(data):
    """Image ids from a (n, 3) batch of `big_mnist` images scaled by 1/256."""
    d = np.round(np.asarray(data, np.float64).reshape(len(data), 3) * 256).astype(np.int64)
    return d[:, 0] + d[:, 1] * 256 + d[:, 2] * 65536


def precision_values():
    """Decimal strings whose float32 values MXNet's own parser (dmlc strtof) gets its way."""
    rng = np.random.RandomState(0)
    vals = []
    for i in range(300):
        k = i % 6
        if k == 0:
            s = repr(float(rng.randn()))
        elif k == 1:
            s = "%.9g" % (rng.randn() * 10.0 ** rng.randint(-30, 30))
        elif k == 2:
            s = "%.3f" % (rng.rand() * 1000)
        elif k == 3:
            s = repr(float(np.float32(rng.randn() * 1e5)))
        elif k == 4:
            s = "%.17e" % (rng.rand() * 10.0 ** rng.randint(-35, 35))
        else:
            s = "-%d.%s" % (rng.randint(0, 10 ** 6), "".join(str(d) for d in rng.randint(0, 10, 22)))
        vals.append(s)
    return vals


def write_inputs(folder):
    """Write every input file the cases read into `folder`."""
    os.makedirs(folder, exist_ok=True)
    img = mnist_images()
    write_idx_images(os.path.join(folder, "mnist-images-idx3-ubyte"), img)
    write_idx_labels(os.path.join(folder, "mnist-labels-idx1-ubyte"), (np.arange(11) * 7) % 10)

    def put(name, text):
        with open(os.path.join(folder, name), "w", newline="") as f:
            f.write(text)

    rows = ["%d.%d,%d,-%d.25,%d,%de-1,%d" % (i, i, 10 + i, i, 20 + i, 3 * i, 40 + i) for i in range(5)]
    put("data.csv", "\n".join(rows) + "\n")
    put("label.csv", "".join("%d\n" % (i * 11) for i in range(5)))
    put("label6.csv", "".join(",".join(str(i * 6 + j) for j in range(6)) + "\n" for i in range(5)))
    put("messy.csv", "1,2,3\r\n\r\n 4 , 5,6 \n\n7,8,9,\n10,11,12")
    put("ints.csv", "3000000000,-2147483649,12345678901234567890\n1.5,-3.2,2e2\n+5, -7 ,0009\n"
                    "0x1A,017,08\n-0x10,0,1e5\n9223372036854775808,-9223372036854775809,4294967296\n")
    put("special.csv", "inf,nan,-inf\n1e-50,1e39,2.5f\nnan(abc),1e+5,1E5\n.5e1,-.5,-0\n"
                       "INFINITY,-Inf,1e38\n3.5e38,1.1e-38,123456789012345678901234\n"
                       "0.12345678901234567890123,1.00000000000000000001,5.\n")
    vals = precision_values()
    put("precision.csv", "".join(",".join(vals[i:i + 3]) + "\n" for i in range(0, len(vals), 3)))
    os.makedirs(os.path.join(folder, "csvdir"), exist_ok=True)
    put(os.path.join("csvdir", "a.csv"), "1,2,3\n")
    put(os.path.join("csvdir", "b.csv"), "4,5,6\n7,8,9\n")


# name -> (kwargs, epochs); file names are relative to the io folder.
CSV_CASES = {
    "csv_round_b3": (dict(data_csv="data.csv", data_shape=(2, 3), batch_size=3), 4),
    "csv_round_b2_label": (dict(data_csv="data.csv", data_shape=(6,), label_csv="label.csv", batch_size=2), 4),
    "csv_round_b4_label6": (dict(data_csv="data.csv", data_shape=(6,), label_csv="label6.csv",
                                 label_shape=(2, 3), batch_size=4), 3),
    "csv_round_b7": (dict(data_csv="data.csv", data_shape=(6,), batch_size=7), 3),
    "csv_round_b11": (dict(data_csv="data.csv", data_shape=(6,), batch_size=11), 1),
    "csv_noround_b3": (dict(data_csv="data.csv", data_shape=(6,), label_csv="label.csv", batch_size=3,
                            round_batch=False), 3),
    "csv_noround_b2_label6": (dict(data_csv="data.csv", data_shape=(3, 2), label_csv="label6.csv",
                                   label_shape=(6,), batch_size=2, round_batch=False), 2),
    "csv_noround_b5": (dict(data_csv="data.csv", data_shape=(6,), batch_size=5, round_batch=False), 2),
    "csv_no_label_shape2": (dict(data_csv="data.csv", data_shape=(6,), label_shape=(2,), batch_size=5), 1),
    "csv_names": (dict(data_csv="data.csv", data_shape=(6,), batch_size=5, data_name="x", label_name="y"), 1),
    "csv_messy": (dict(data_csv="messy.csv", data_shape=(3,), batch_size=4), 1),
    "csv_int32": (dict(data_csv="ints.csv", data_shape=(3,), label_csv="ints.csv", label_shape=(3,),
                       batch_size=6, dtype="int32"), 1),
    "csv_int64": (dict(data_csv="ints.csv", data_shape=(3,), batch_size=6, dtype="int64"), 1),
    "csv_special": (dict(data_csv="special.csv", data_shape=(3,), batch_size=7), 1),
    "csv_precision": (dict(data_csv="precision.csv", data_shape=(3,), batch_size=100), 1),
    "csv_dir": (dict(data_csv="csvdir", data_shape=(3,), batch_size=2), 2),
    "csv_float64": (dict(data_csv="data.csv", data_shape=(6,), batch_size=2, dtype="float64"), 1),
    "csv_bad_shape": (dict(data_csv="data.csv", data_shape=(5,), batch_size=2), 1),
    "csv_short_label": (dict(data_csv="data.csv", data_shape=(6,), label_csv="csvdir/b.csv",
                             label_shape=(3,), batch_size=5), 1),
}
# Cases where MXNet pads with memory it never wrote (the first batch, round_batch=False):
# only the rows before the padding are compared.
CSV_UNWRITTEN_PAD = {"csv_noround_b5"}

_MN = dict(image="mnist-images-idx3-ubyte", label="mnist-labels-idx1-ubyte", silent=True)
MNIST_CASES = {
    "mnist_plain": (dict(_MN, batch_size=3, shuffle=False), 2),
    "mnist_flat": (dict(_MN, batch_size=4, shuffle=False, flat=True), 1),
    "mnist_shuffle_seed0": (dict(_MN, batch_size=2, shuffle=True), 2),
    "mnist_shuffle_seed7": (dict(_MN, batch_size=5, shuffle=True, seed=7), 2),
    "mnist_shuffle_seed_neg": (dict(_MN, batch_size=5, shuffle=True, seed=-1, flat=True), 1),
    "mnist_parts": (dict(_MN, batch_size=2, shuffle=True, seed=3, num_parts=3, part_index=1), 2),
    "mnist_parts_last": (dict(_MN, batch_size=1, shuffle=False, num_parts=3, part_index=2), 1),
    "mnist_whole": (dict(_MN, batch_size=11, shuffle=False), 1),
    "mnist_names": (dict(_MN, batch_size=4, data_name="img", label_name="lab"), 1),
}
BIG_SEEDS = (0, 12345)


def record_payloads():
    """Records for the RecordIO files: empty, unaligned, and with MXNet's magic inside."""
    rng = np.random.RandomState(5)
    big = bytearray(rng.randint(0, 256, 301).astype(np.uint8).tobytes())
    for at in (0, 100, 51, 296):  # aligned ones split the record; 51 is unaligned and does not
        big[at:at + 4] = MAGIC
    return [b"", b"a", b"abc", b"abcd", b"abcde", MAGIC, b"xy" + MAGIC,
            b"abcd" + MAGIC + b"efgh" + MAGIC + MAGIC, MAGIC + b"z", b"1234" + MAGIC, bytes(big)]


# (flag, label, id, id2), payload
PACK_CASES = [
    ((0, 3.5, 7, 0), b"img"),
    ((4, 2, 1, 2), b""),
    ((0, [1, 2.5, 3], 8, 1), b"xyz"),
    ((9, [4.0], 2 ** 40, 2 ** 63), b"p"),
    ((0, [], 0, 0), b"empty label"),
]


def _desc(d):
    return [d.name, list(d.shape), np.dtype(d.dtype).name]


def _error(e):
    line = str(e).strip().splitlines()[-1]
    return {"error": type(e).__name__, "message": re.sub(r"\[\d\d:\d\d:\d\d\] ", "", line)}


def _batches(mx, name_of, kwargs, epochs):
    """Every batch of `epochs` epochs; an error ends the record where MXNet raised it."""
    try:
        it = getattr(mx.io, name_of)(**kwargs)
    except (mx.base.MXNetError, StopIteration) as e:
        return _error(e)
    out = {"provide_data": [_desc(d) for d in it.provide_data],
           "provide_label": [_desc(d) for d in it.provide_label], "epochs": []}
    for _ in range(epochs):
        ep = []
        out["epochs"].append(ep)
        try:
            for b in it:
                ep.append({"data": b.data[0].asnumpy().tolist(), "label": b.label[0].asnumpy().tolist(),
                           "pad": int(b.pad), "index": None if b.index is None else [int(i) for i in b.index]})
        except mx.base.MXNetError as e:
            out.update(_error(e))
            return out
        it.reset()
    return out


def run_iters(mx):
    results = {}
    cwd = os.getcwd()
    os.chdir(OUT)
    try:
        for table, name_of in ((CSV_CASES, "CSVIter"), (MNIST_CASES, "MNISTIter")):
            for name, (kwargs, epochs) in table.items():
                results[name] = _batches(mx, name_of, dict(kwargs), epochs)
    finally:
        os.chdir(cwd)
    tmp = os.path.join(OUT, "_big")
    os.makedirs(tmp, exist_ok=True)
    try:
        image, label = big_mnist(tmp)
        big = {}
        for seed in BIG_SEEDS:
            it = mx.io.MNISTIter(image=image, label=label, batch_size=70000, shuffle=True, seed=seed,
                                 flat=True, silent=True)
            b = it.next()
            order = big_order(b.data[0].asnumpy())
            assert (order % 10 == b.label[0].asnumpy()).all()
            big[str(seed)] = {"sha256": hashlib.sha256(order.astype("<i8").tobytes()).hexdigest(),
                              "head": order[:20].tolist()}
        results["mnist_big_shuffle"] = big
    finally:
        shutil.rmtree(tmp)
    return results


def write_records(mx):
    payloads = record_payloads()
    w = mx.recordio.MXRecordIO(os.path.join(OUT, "records.rec"), "w")
    for p in payloads:
        w.write(p)
    w.close()
    w = mx.recordio.MXIndexedRecordIO(os.path.join(OUT, "indexed.idx"), os.path.join(OUT, "indexed.rec"), "w")
    tells = [w.tell()]
    for i, p in enumerate(payloads):
        w.write_idx(i * 10, p)
        tells.append(w.tell())
    w.close()
    w = mx.recordio.MXIndexedRecordIO(os.path.join(OUT, "strkeys.idx"), os.path.join(OUT, "strkeys.rec"), "w",
                                      key_type=str)
    for i, p in enumerate(payloads[:4]):
        w.write_idx("key_%d" % (3 - i), p)
    w.close()
    # MXNet reads its own files back
    r = mx.recordio.MXRecordIO(os.path.join(OUT, "records.rec"), "r")
    assert [r.read() for _ in payloads] == payloads and r.read() is None
    r.close()
    r = mx.recordio.MXIndexedRecordIO(os.path.join(OUT, "indexed.idx"), os.path.join(OUT, "indexed.rec"), "r")
    assert [r.read_idx(k) for k in reversed(r.keys)] == payloads[::-1]
    r.close()
    packs = []
    for header, s in PACK_CASES:
        packed = mx.recordio.pack(mx.recordio.IRHeader(*header), s)
        h, rest = mx.recordio.unpack(packed)
        label = h.label.tolist() if isinstance(h.label, np.ndarray) else h.label
        packs.append({"header": list(header), "payload": s.hex(), "packed": packed.hex(),
                      "unpacked": [h.flag, label, h.id, h.id2], "rest": rest.hex()})
    return {"payloads": [p.hex() for p in payloads], "tells": tells, "pack": packs}


def main():
    import mxnet as mx  # noqa: PLC0415 - only the generator needs MXNet

    write_inputs(OUT)
    iters = run_iters(mx)
    with open(os.path.join(OUT, "iters.json"), "w") as f:
        json.dump(iters, f, sort_keys=True, separators=(",", ":"))
        f.write("\n")
    rec = write_records(mx)
    with open(os.path.join(OUT, "recordio.json"), "w") as f:
        json.dump(rec, f, sort_keys=True, indent=1)
        f.write("\n")
    for name in sorted(iters):
        r = iters[name]
        what = "%d epochs" % len(r["epochs"]) if "epochs" in r else ""
        what += " " + r.get("message", "")
        print("%-26s %s" % (name, what), file=sys.stderr)


if __name__ == "__main__":
    main()
