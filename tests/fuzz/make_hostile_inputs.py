#!/usr/bin/env python3
"""Writes the hostile shapes of issue 15 into the fuzz corpora (tests/fuzz/corpus/...).

Each file once made a parser slow, huge or crash; the corpus replay (every build) and
`make fuzz` (libFuzzer, -timeout per unit) keep them fixed:
  fatbin/elf_wrappers_times_relocations  1 MiB: 21k fatbin wrappers x 21k relocations
                                         (the relocation lookup was a scan per wrapper: 26 s)
  fatbin/elf_containers_times_links      1 MiB: 32k containers x 16k link wrappers
  fatbin/entry_claims_1gib               a zstd entry of 16 bytes claiming a 1 GiB image
  fatbin/elf_entry_claims_1gib           the same inside an ELF .nv_fatbin (hetrun inspect FILE)
  plan/nested_100k, scenario/nested_100k 100 KB of '['
  plan/nested_balanced_100k              50k '[' then 50k ']' (plan crashed with SIGSEGV)
Run it from anywhere: python3 tests/fuzz/make_hostile_inputs.py
"""
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
WRAPPER_MAGIC = 0x466243B1
FATBIN_MAGIC = 0xBA55ED50


def elf(sections, size):
    """A little-endian x86-64 ET_DYN image of `size` bytes. sections: (name, type, flags,
    address, offset, bytes) with bytes placed at offset."""
    names = b"\0"
    name_at = []
    for s in sections:
        name_at.append(len(names))
        names += s[0].encode() + b"\0"
    shstrtab_name = len(names)
    names += b".shstrtab\0"
    out = bytearray(size)
    headers_at = size - 64 * (len(sections) + 2)
    names_at = headers_at - len(names) - 8
    out[0:7] = b"\x7fELF\x02\x01\x01"
    struct.pack_into("<HH", out, 16, 3, 62)
    struct.pack_into("<Q", out, 0x28, headers_at)
    struct.pack_into("<HHH", out, 0x3A, 64, len(sections) + 2, len(sections) + 1)
    for i, (name, typ, flags, address, offset, data) in enumerate(sections):
        assert offset + len(data) <= names_at
        out[offset:offset + len(data)] = data
        struct.pack_into("<IIQQQQ", out, headers_at + 64 * (i + 1), name_at[i], typ, flags,
                         address, offset, len(data))
    out[names_at:names_at + len(names)] = names
    struct.pack_into("<IIQQQQ", out, headers_at + 64 * (len(sections) + 1), shstrtab_name, 3, 0,
                     0, names_at, len(names))
    return bytes(out)


def wrappers_times_relocations():
    half = 1 << 19
    n = (half - 4096) // 24
    wrappers = b"".join(struct.pack("<IIQQ", WRAPPER_MAGIC, 1, 0, 0) for _ in range(n))
    relas = b"".join(struct.pack("<QQq", 0x10, 8, 0) for _ in range(n))
    return elf([(".nv_fatbin", 1, 2, 0x1000, 0x40, b""),
                (".nvFatBinSegment", 1, 2, 0x100000, 0x1000, wrappers),
                (".rela.dyn", 4, 2, 0x200000, 0x1000 + len(wrappers), relas)], 1 << 20)


def containers_times_links():
    containers = 32768
    fatbin = b"".join(struct.pack("<IHHQ", FATBIN_MAGIC, 1, 16, 0) for _ in range(containers))
    n = 16384
    # Link (version 2) wrappers pointing nowhere near a container: every lookup misses.
    wrappers = b"".join(struct.pack("<IIQQ", WRAPPER_MAGIC, 2, 0x7000000 + i, 0) for i in range(n))
    return elf([(".nv_fatbin", 1, 2, 0x1000, 0x40, fatbin),
                (".nvFatBinSegment", 1, 2, 0x800000, 0x40 + len(fatbin), wrappers)], 1 << 20)


def entry_claims_1gib():
    # A container with one zstd PTX entry: 16 stored bytes, 1 GiB declared uncompressed.
    entry = bytearray(64 + 16)
    struct.pack_into("<HHIQI", entry, 0, 1, 0x101, 64, 16, 16)
    struct.pack_into("<HHI", entry, 24, 0, 9, 90)
    struct.pack_into("<Q", entry, 40, 0x8011)
    struct.pack_into("<Q", entry, 56, 1 << 30)
    container = struct.pack("<IHHQ", FATBIN_MAGIC, 1, 16, len(entry)) + bytes(entry)
    return container  # not ELF: the fuzzer wraps it in a .nv_fatbin section


def main():
    files = {
        "fatbin/elf_wrappers_times_relocations": wrappers_times_relocations(),
        "fatbin/elf_containers_times_links": containers_times_links(),
        "fatbin/entry_claims_1gib": entry_claims_1gib(),
        "fatbin/elf_entry_claims_1gib": elf([(".nv_fatbin", 1, 2, 0x1000, 0x40,
                                             entry_claims_1gib())], 4096),
        "plan/nested_100k": b"[" * 100_000,
        "plan/nested_balanced_100k": b"[" * 50_000 + b"]" * 50_000,
        "scenario/nested_100k": b'{"stages": ' + b"[" * 100_000,
    }
    for name, data in files.items():
        path = os.path.join(ROOT, name)
        with open(path, "wb") as f:
            f.write(data)
        print(f"{path}: {len(data)} bytes")


if __name__ == "__main__":
    main()
