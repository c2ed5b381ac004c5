# SPDX-License-Identifier: GPL-2.0-only
"""neutralize.py IN OUT [INDEX] -- for arm64 (ELF64 little-endian RELA) modules.

Strips the appended module signature. With INDEX, also turns callsite
relocation INDEX of __patchable_function_entries into R_AARCH64_NONE and
zeroes its word: the bytes the tool would write, for a kernel the tool
refuses (scripts/adjust-first-demo.sh shows why it refuses).
"""
import struct, sys
data = bytearray(open(sys.argv[1], 'rb').read())
magic = b"~Module signature appended~\n"
if data.endswith(magic):
    sig_len = struct.unpack('>I', data[-len(magic)-4:-len(magic)])[0]
    data = data[:len(data) - len(magic) - 12 - sig_len]
shoff, = struct.unpack_from('<Q', data, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from('<HHH', data, 0x3a)
secs = [struct.unpack_from('<IIQQQQIIQQ', data, shoff + i * shentsize) for i in range(shnum)]
strtab_off = secs[shstrndx][4]
def name(s):
    o = strtab_off + s[0]
    return bytes(data[o:data.index(b'\0', o)]).decode()
idx = {name(s): i for i, s in enumerate(secs)}
if len(sys.argv) > 3:
    n = int(sys.argv[3])
    pfe = secs[idx['__patchable_function_entries']]
    rela = secs[idx['.rela__patchable_function_entries']]
    off = rela[4] + n * 24
    r_offset, r_info, r_addend = struct.unpack_from('<QQq', data, off)
    struct.pack_into('<QQq', data, off, r_offset, 0, 0)
    struct.pack_into('<Q', data, pfe[4] + r_offset, 0)
    print(f"entry {n}: offset {r_offset:#x} sym {r_info >> 32} addend {r_addend:#x} -> R_AARCH64_NONE, word 0")
open(sys.argv[2], 'wb').write(data)
