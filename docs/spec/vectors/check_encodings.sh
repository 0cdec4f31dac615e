#!/bin/sh
# Cross-check the instruction words in docs/spec/vectors/scalar_*.json
# against GNU as: every assembly line (except raw `.word` lines) is
# assembled with riscv64-unknown-elf-as -march=rv32im_zba and the word from
# objdump must equal the word in the JSON. The bn.* mnemonics are assembled
# with the `.insn r CUSTOM_0, f3, 0, rd, rs1, rs2` forms of bignum.md §1.
# Raw `.word` lines (illegal words, odd FENCE fields) are listed with
# objdump's reading of them, for a human to look at.
#
# Usage: sh docs/spec/vectors/check_encodings.sh     (exit status 0 = all agree)
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
AS=${AS:-riscv64-unknown-elf-as}
OBJDUMP=${OBJDUMP:-riscv64-unknown-elf-objdump}
command -v "$AS" >/dev/null || { echo "check_encodings: $AS not found (apt-get install binutils-riscv64-unknown-elf)" >&2; exit 2; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

python3 - "$HERE" "$TMP" <<'EOF'
import glob, json, os, re, sys
here, tmp = sys.argv[1], sys.argv[2]
BN = {"bn.addc": 0, "bn.subb": 1, "bn.xchgc": 2, "bn.mac": 3, "bn.accrd": 4, "bn.accclr": 5}
def gas(line):
    text = line.split("#")[0].strip()
    mn, _, rest = text.partition(" ")
    ops = [o.strip() for o in rest.split(",")] if rest.strip() else []
    if mn not in BN:
        return text
    f3 = BN[mn]
    rd, rs1, rs2 = {0: lambda: ops, 1: lambda: ops, 2: lambda: (ops[0], ops[1], "x0"),
                    3: lambda: ("x0", ops[0], ops[1]), 4: lambda: (ops[0], "x0", "x0"),
                    5: lambda: ("x0", "x0", "x0")}[f3]()
    return ".insn r CUSTOM_0, %d, 0, %s, %s, %s" % (f3, rd, rs1, rs2)
pairs, raw = {}, {}
for path in sorted(glob.glob(os.path.join(here, "scalar_*.json"))):
    for ex in json.load(open(path))["examples"]:
        for word, line in zip(ex["code"], ex["asm"]):
            if line.strip().startswith(".word"):
                raw[word] = line
            else:
                pairs.setdefault(gas(line), set()).add(word)
lines = sorted(pairs)
with open(os.path.join(tmp, "a.s"), "w") as f:
    f.write("".join(l + "\n" for l in lines))
with open(os.path.join(tmp, "want.txt"), "w") as f:
    for l in lines:
        assert len(pairs[l]) == 1, (l, pairs[l])
        f.write("%s\t%s\n" % (next(iter(pairs[l]))[2:], l))
with open(os.path.join(tmp, "raw.s"), "w") as f:
    # .insn makes objdump decode the word (a .word would be shown as data);
    # words whose length bits do not say 32-bit stay .word
    for w, l in sorted(raw.items()):
        v = int(w, 16)
        d = ".insn 4, %s" % w if (v & 3) == 3 and (v & 0x1c) != 0x1c else ".word %s" % w
        f.write("%s  # %s\n" % (d, l.split("#", 1)[-1].strip()))
EOF

"$AS" -march=rv32im_zba -mabi=ilp32 -mno-relax "$TMP/a.s" -o "$TMP/a.o"
"$OBJDUMP" -d "$TMP/a.o" | sed -n 's/^ *[0-9a-f]*:\t\([0-9a-f]\{8\}\) .*/\1/p' > "$TMP/got.txt"
cut -f1 "$TMP/want.txt" > "$TMP/wantw.txt"
n=$(wc -l < "$TMP/want.txt")
if ! cmp -s "$TMP/got.txt" "$TMP/wantw.txt"; then
    echo "check_encodings: MISMATCH (want<TAB>asm vs got):" >&2
    paste "$TMP/want.txt" "$TMP/got.txt" | awk -F'\t' '$1 != $3' >&2
    exit 1
fi
echo "check_encodings: $n distinct assembly lines agree with $AS"

# a wide -march so that objdump names what it can (RV64, Zbb, CSRs, ...)
"$AS" -march=rv64gc_zbb_zicsr_zifencei "$TMP/raw.s" -o "$TMP/raw.o"
echo "raw .word lines, all illegal or odd on purpose (objdump -M no-aliases, rv64gc_zbb | JSON comment):"
"$OBJDUMP" -d -M no-aliases "$TMP/raw.o" | sed -n 's/^ *[0-9a-f]*:\t\([0-9a-f]\{8\}\) *\t\(.*\)/\1  \2/p' > "$TMP/rawdis.txt"
sed 's/^[^#]*# //' "$TMP/raw.s" | paste -d'|' "$TMP/rawdis.txt" - | sed 's/^/  /'
