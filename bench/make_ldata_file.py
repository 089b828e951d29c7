#!/usr/bin/env python3
"""Writes a synthetic shared-object-like ELF file of about SIZE MiB whose .ldata holds one-image
fatbin containers (sm_80, sm_90 SASS, compute_90 PTX; 8-aligned) among random bytes that carry the
container magic at 8-aligned offsets without being containers (for bench/fatbin_scan.sh).
Usage: make_ldata_file.py OUT SIZE_MIB"""
import os
import random
import struct
import sys

MAGIC = 0xBA55ED50


def container(kind, sm, payload):
    entry = struct.pack("<HHIQIIHHI", kind, 0x101, 64, len(payload), 0, 0, 0, 8, sm)
    entry += b"\0" * (64 - len(entry))
    return struct.pack("<IHHQ", MAGIC, 1, 16, 64 + len(payload)) + entry + payload


def main():
    out, mib = sys.argv[1], int(sys.argv[2])
    rng = random.Random(37)
    chunks, size = [], 0
    lookalike = struct.pack("<IHHQ", MAGIC, 1, 16, 1 << 40)  # payload past the section
    while size < mib << 20:
        noise = bytearray(rng.randbytes(8 * rng.randrange(64, 4096)))
        noise[0:16] = lookalike
        payload = rng.randbytes(8 * rng.randrange(256, 2048))
        kind, sm = rng.choice([(2, 80), (2, 90), (1, 90)])
        for part in (bytes(noise), container(kind, sm, payload)):
            chunks.append(part)
            size += len(part)
    data = b"".join(chunks)
    names = b"\0.ldata\0.shstrtab\0"
    data_off = 64
    names_off = data_off + len(data)
    shoff = (names_off + len(names) + 7) // 8 * 8
    header = bytearray(64)
    header[0:7] = b"\x7fELF\x02\x01\x01"
    struct.pack_into("<HH", header, 16, 3, 62)
    struct.pack_into("<Q", header, 0x28, shoff)
    struct.pack_into("<HHH", header, 0x3A, 64, 3, 2)
    sections = bytearray(64)
    sections += struct.pack("<IIQQQQIIQQ", 1, 1, 3, 0x100000, data_off, len(data), 0, 0, 8, 0)
    sections += struct.pack("<IIQQQQIIQQ", 8, 3, 0, 0, names_off, len(names), 0, 0, 1, 0)
    with open(out, "wb") as f:
        f.write(header)
        f.write(data)
        f.write(names)
        f.write(b"\0" * (shoff - names_off - len(names)))
        f.write(sections)
    os.chmod(out, 0o644)


if __name__ == "__main__":
    main()
