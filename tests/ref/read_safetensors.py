#!/usr/bin/env python3
"""read_safetensors.py - an independent reader of safetensors files (json and struct only),
for tests/unit/test_safetensors.c.

    read_safetensors.py FILE              check the layout, list the tensors and their values
    read_safetensors.py FILE EXPECT.json  also compare with EXPECT.json:
        {"metadata": {KEY: VALUE, ...} or null (no "__metadata__" at all),
         "tensors": [{"name": .., "dtype": "F32", "shape": [..],
                      "bits": ["3f800000", ..]}, ...]}
      bits: each element's bit pattern (F32, I32: 8 hex digits; F64, I64: 16; U8: 2); the tensors in
      the order the writer was given them, which must be their order in the data section.

The layout checked: u64 little-endian N; 8 + N a multiple of 8; N bytes of UTF-8 JSON (an
object, no duplicate keys) followed only by spaces; every entry but "__metadata__" a tensor with
a known dtype, a shape of non-negative integers and data_offsets [begin, end] with
end - begin = elements * element size; the tensors contiguous from offset 0 and the data
section ending at the last one's end, exactly at the end of the file.

If the `safetensors` package (with numpy) happens to be installed, the file is also loaded with
it and compared; it is never required. Exit status: 0 ok, 1 mismatch or malformed, 2 usage.
"""
import json
import struct
import sys

DTYPES = {"F32": (4, "I", "f"), "F64": (8, "Q", "d"), "U8": (1, "B", "B"), "I32": (4, "I", "i"),
          "I64": (8, "Q", "q")}


class Bad(Exception):
    pass


def no_duplicates(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise Bad("duplicate key %r in the header" % k)
        d[k] = v
    return d


def parse(blob):
    if len(blob) < 8:
        raise Bad("file of %d bytes: no header length" % len(blob))
    (n,) = struct.unpack("<Q", blob[:8])
    if (8 + n) % 8 != 0:
        raise Bad("8 + N = %d is not a multiple of 8" % (8 + n))
    if 8 + n > len(blob):
        raise Bad("header length %d runs past the end of the file (%d bytes)" % (n, len(blob)))
    raw = blob[8:8 + n]
    text = raw.decode("utf-8")  # UnicodeDecodeError: not UTF-8
    body = text.rstrip(" ")
    if not body.startswith("{"):
        raise Bad("the header does not start with '{'")
    header = json.loads(body, object_pairs_hook=no_duplicates)
    if not isinstance(header, dict):
        raise Bad("the header is not a JSON object")
    data = blob[8 + n:]
    meta = header.pop("__metadata__", None)
    if meta is not None:
        if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
            raise Bad("__metadata__ is not an object of strings")
    tensors = []
    for name, info in header.items():
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise Bad("tensor %r: entry %r" % (name, info))
        dtype, shape, offs = info["dtype"], info["shape"], info["data_offsets"]
        if dtype not in DTYPES:
            raise Bad("tensor %r: unknown dtype %r" % (name, dtype))
        if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise Bad("tensor %r: shape %r" % (name, shape))
        if not isinstance(offs, list) or len(offs) != 2 or not all(isinstance(o, int) for o in offs):
            raise Bad("tensor %r: data_offsets %r" % (name, offs))
        count = 1
        for d in shape:
            count *= d
        size, ufmt, vfmt = DTYPES[dtype]
        begin, end = offs
        if not 0 <= begin <= end <= len(data) or end - begin != count * size:
            raise Bad("tensor %r: data_offsets %r for %d elements of %d bytes (data section %d bytes)"
                      % (name, offs, count, size, len(data)))
        chunk = data[begin:end]
        bits = struct.unpack("<%d%s" % (count, ufmt), chunk)
        values = struct.unpack("<%d%s" % (count, vfmt), chunk)
        tensors.append({"name": name, "dtype": dtype, "shape": shape, "begin": begin, "end": end,
                        "bits": list(bits), "values": list(values)})
    pos = 0
    for t in sorted(tensors, key=lambda t: t["begin"]):
        if t["begin"] != pos:
            raise Bad("tensor %r begins at %d, not %d: the tensors are not contiguous" % (t["name"], t["begin"], pos))
        pos = t["end"]
    if pos != len(data):
        raise Bad("the data section has %d bytes, the tensors end at %d" % (len(data), pos))
    return meta, tensors


def compare(meta, tensors, expect):
    errors = []
    if meta != expect["metadata"]:
        errors.append("metadata %r, expected %r" % (meta, expect["metadata"]))
    want = expect["tensors"]
    got = {t["name"]: t for t in tensors}
    if sorted(got) != sorted(w["name"] for w in want):
        errors.append("tensors %r, expected %r" % (sorted(got), sorted(w["name"] for w in want)))
        return errors
    pos = 0
    for w in want:
        t = got[w["name"]]
        if t["begin"] != pos:
            errors.append("tensor %r begins at %d, expected %d (the order given)" % (w["name"], t["begin"], pos))
        pos = t["end"]
        if t["dtype"] != w["dtype"] or t["shape"] != w["shape"]:
            errors.append("tensor %r: %s %r, expected %s %r"
                          % (w["name"], t["dtype"], t["shape"], w["dtype"], w["shape"]))
            continue
        exp_bits = [int(h, 16) for h in w["bits"]]
        for i, (a, b) in enumerate(zip(t["bits"], exp_bits)):
            if a != b:
                errors.append("tensor %r element %d: bits %x, expected %x" % (w["name"], i, a, b))
        if len(t["bits"]) != len(exp_bits):
            errors.append("tensor %r: %d elements, expected %d" % (w["name"], len(t["bits"]), len(exp_bits)))
    return errors


def with_library(path, tensors):
    """The safetensors package's own reader, where it is installed (never required)."""
    try:
        from safetensors.numpy import load_file
    except ImportError:
        return []
    loaded = load_file(path)
    errors = []
    for t in tensors:
        a = loaded.get(t["name"])
        if a is None or list(a.shape) != t["shape"] or a.tobytes() != struct.pack(
                "<%d%s" % (len(t["bits"]), DTYPES[t["dtype"]][1]), *t["bits"]):
            errors.append("safetensors.numpy reads tensor %r differently" % t["name"])
    print("safetensors.numpy: %d tensors loaded" % len(loaded))
    return errors


def main(argv):
    if len(argv) not in (2, 3):
        print("usage: read_safetensors.py FILE [EXPECT.json]", file=sys.stderr)
        return 2
    with open(argv[1], "rb") as f:
        blob = f.read()
    try:
        meta, tensors = parse(blob)
    except (Bad, ValueError, UnicodeDecodeError) as e:
        print("%s: malformed: %s" % (argv[1], e))
        return 1
    print("%s: %d tensors, metadata %r" % (argv[1], len(tensors), meta))
    for t in tensors:
        shown = ", ".join(repr(v) for v in t["values"][:8])
        print("  %s %s %r [%d, %d): %s%s" % (t["name"], t["dtype"], t["shape"], t["begin"], t["end"], shown,
                                            ", ..." if len(t["values"]) > 8 else ""))
    errors = []
    if len(argv) == 3:
        with open(argv[2], encoding="utf-8") as f:
            errors = compare(meta, tensors, json.load(f))
    errors += with_library(argv[1], tensors)
    for e in errors:
        print("MISMATCH " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
