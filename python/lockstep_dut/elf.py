"""A guest image from a static ELF32 RISC-V executable, as Lockstep's engine builds it.

``load_elf(path)`` gives the ``Image`` that ``lockstep run`` sends in RESET (dut-protocol.md §3.3,
chip-format.md §2): one segment per ``PT_LOAD`` at ``p_vaddr`` with its file bytes followed by
zeros up to ``p_memsz``, every named non-alloc ``PROGBITS`` section by name (``.lockstep.vreg``,
...), and the entry point. For chip builders' own tests; standard library only. Raises
``ValueError`` (one line) on a file that is not a little-endian ELF32 or is cut short.
"""

from __future__ import annotations

import os
import stat
import struct

from .protocol import Image

PT_LOAD = 1
SHT_PROGBITS = 1
SHF_ALLOC = 2


def parse_elf(data: bytes, name: str = "ELF") -> Image:
    """The guest image of the ELF32 file bytes ``data``."""
    def need(offset: int, size: int, what: str) -> None:
        if offset < 0 or size < 0 or offset + size > len(data):
            raise ValueError(f"{name}: {what} outside the file ({offset:#x}+{size:#x}, "
                             f"file size {len(data)})")

    need(0, 52, "ELF header")
    if data[:4] != b"\x7fELF" or data[4] != 1 or data[5] != 1:
        raise ValueError(f"{name}: not a little-endian ELF32 file")
    (entry, phoff, shoff) = struct.unpack_from("<III", data, 24)
    (phentsize, phnum, shentsize, shnum, shstrndx) = struct.unpack_from("<HHHHH", data, 42)
    image = Image(entry=entry)
    for i in range(phnum):
        need(phoff + i * phentsize, 32, f"program header {i}")
        p_type, p_offset, p_vaddr, _, p_filesz, p_memsz = struct.unpack_from(
            "<IIIIII", data, phoff + i * phentsize)
        if p_type != PT_LOAD:
            continue
        if p_filesz > p_memsz:
            raise ValueError(f"{name}: segment {i}: p_filesz > p_memsz")
        need(p_offset, p_filesz, f"segment {i}")
        image.segments.append((p_vaddr, data[p_offset:p_offset + p_filesz] + bytes(p_memsz - p_filesz)))
    if shnum:
        need(shoff + shstrndx * shentsize, 40, "section name table header")
        names_off = struct.unpack_from("<IIIIII", data, shoff + shstrndx * shentsize)[4]
        headers = []
        for i in range(shnum):
            need(shoff + i * shentsize, 40, f"section header {i}")
            headers.append(struct.unpack_from("<IIIIII", data, shoff + i * shentsize))
        for sh_name, sh_type, sh_flags, _, sh_offset, sh_size in headers:
            if sh_type != SHT_PROGBITS or sh_flags & SHF_ALLOC:
                continue
            end = data.find(b"\0", names_off + sh_name)
            section = data[names_off + sh_name:end].decode("utf-8", "replace")
            if not section:
                continue
            need(sh_offset, sh_size, f"section {section}")
            image.sections[section] = data[sh_offset:sh_offset + sh_size]
        image.sections = dict(sorted(image.sections.items()))
    return image


def load_elf(path: "str | os.PathLike[str]") -> Image:
    """The guest image of the ELF file at ``path`` (a str or path-like; an int would be read as a
    file descriptor, so it is refused with ``TypeError``). A file that cannot be read, or is
    not a regular file, raises ``ValueError`` (one line naming it and why)."""
    if isinstance(path, (bool, int)) or not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"load_elf: path {path!r} (a {type(path).__name__}): give a str or path-like (an int would be read as a file descriptor)")
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise ValueError(f"{os.fsdecode(path)}: not a regular file")
        with open(path, "rb") as f:
            return parse_elf(f.read(), os.fsdecode(path))
    except OSError as e:
        raise ValueError(f"{os.fsdecode(path)}: cannot read: {e.strerror or e}") from None
