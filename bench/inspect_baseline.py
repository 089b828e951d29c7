#!/usr/bin/env python3
"""Baseline for bench/inspect.sh: the straightforward way — read the whole .nv_fatbin section
into memory and walk its containers and entries. Prints the container and entry counts."""
import struct
import sys


def main(path):
    with open(path, "rb") as f:
        data = f.read()
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = headers[shstrndx][4]
    for h in headers:
        name = data[names + h[0]:data.index(b"\0", names + h[0])]
        if name == b".nv_fatbin":
            section = data[h[4]:h[4] + h[5]]
            break
    else:
        print("no .nv_fatbin")
        return
    pos, containers, entries = 0, 0, 0
    while pos + 16 <= len(section):
        magic, _, hsize, size = struct.unpack_from("<IHHQ", section, pos)
        if magic != 0xBA55ED50:
            pos += 8
            continue
        containers += 1
        e, end = pos + hsize, pos + hsize + size
        while e < end:
            ehsize, psize = struct.unpack_from("<IQ", section, e + 4)
            entries += 1
            e += ehsize + psize
        pos = end
    print(f"{containers} containers, {entries} entries")


if __name__ == "__main__":
    main(sys.argv[1])
