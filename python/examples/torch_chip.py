#!/usr/bin/env python3
"""torch_chip: an executor of docs/spec/chip-format.md on PyTorch, served as a chip under test.

    python3 python/examples/torch_chip.py CHIP_FILE [--device cpu|cuda] [--max-streams N]
                                          [--listen unix:PATH|tcp:127.0.0.1:PORT]

It reads the chip's safetensors file itself (§3, validated as §3.3 says: one line
``torch_chip: error: ...`` and exit status 2 on a bad file), runs the layer math of §1.2 in fp32
on the chosen device, resets streams from the guest image with the initialisers of §2, and
speaks lockstep-dut/1 (docs/spec/dut-protocol.md) through ``lockstep_dut``: HELLO, STREAMS,
RESET, STEP, native FORCED and FREE (a loop over steps, each step one batch across streams),
PROBES (the config's fields and probe points), HASH (§2.1's XXH3-64, when the ``xxhash``
module is present) and SAVE/RESTORE (§2.1's stream checkpoint layout).

How it computes (written from the spec, not from Lockstep's C++ executors): the residual ``x``
is kept sparse, as ``(key, value)`` with ``key = dim * n + p`` for batch position ``p`` of ``n``;
every map is a CSC matrix, and ``W x`` gathers only the columns of ``x``'s non-zero dimensions
(``torch.repeat_interleave`` over the column lengths), sums equal output keys with
``torch.unique`` + ``index_add_`` and adds the bias. The maps of all heads of a layer are
stacked into one matrix (k, q, v and beta rows of every head; one ``o`` matrix over every
head's value space), so that a layer's memory block is a few tensor operations whatever its
number of heads, and the delta-rule update and read touch only the state columns that the
one-hot-like keys and queries select. Every value is an integer below 2^24 (chip-format.md
§1.3), so fp32 sums are exact in any order and the tokens are those of any other exact
executor.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import stat
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import lockstep_dut  # noqa: E402
from lockstep_dut import AFTER_EMBED, AFTER_MEMORY, AFTER_MLP, ProbeField, ProbeMap, ProbePoint  # noqa: E402

VERSION = "0.1"
PROG = "torch_chip"
MAX_STREAMS_LIMIT = lockstep_dut.protocol.MAX_ENTRIES  # a batch's entries (dut-protocol.md limits)

try:
    import torch
except ImportError:  # the one line the tests and the tutorial expect
    torch = None

try:
    import xxhash
except ImportError:
    xxhash = None


class ChipFormatError(Exception):
    """A chip file that breaks chip-format.md §3 (one line)."""


def need(cond: bool, message: str) -> None:
    if not cond:
        raise ChipFormatError(message)


ACTS = ("identity", "relu")
FORMATS = {"fp32": None, "bf16": "bfloat16", "fp16": "float16"}
MLP_KINDS = ("none", "relu", "gated")
AFTER = {"embed": AFTER_EMBED, "memory": AFTER_MEMORY, "mlp": AFTER_MLP}
ENCODING_ROWS = {"scalar": 1, "bits": 8, "onehot": 256, "nibbles": 32}
ACTIVATIONS = {"embed", "mem.k", "mem.q", "mem.v", "mem.beta", "mem.state", "mem.o", "mem.resid",
               "mlp.pre", "mlp.u", "mlp.hidden", "mlp.resid", "logits"}
CHIP_WIDE_ACTIVATIONS = {"embed", "logits"}


def is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


# ---------------------------------------------------------------------------------------------
# The file (chip-format.md §3)

class Map:
    """One affine map of §1.1 (rows x cols), as loaded: entry columns, rows and values (CSC
    order), bias rows and values. Tensors live on the CPU; int64 indices, fp32 values."""

    def __init__(self, name, rows, cols, col, row, val, bias_idx, bias_val):
        self.name, self.rows, self.cols = name, rows, cols
        self.col, self.row, self.val = col, row, val
        self.bias_idx, self.bias_val = bias_idx, bias_val


def _check_config(cfg) -> None:
    """The configuration's keys, types and ranges (§3.1, §3.3)."""
    need(isinstance(cfg, dict), "configuration is not a JSON object")
    for key in ("format", "format_version", "spec_version", "compiler", "d_model", "vocab_size",
                "number_format", "layers", "fields", "probes", "bounds", "initialisers"):
        need(key in cfg, f"configuration: missing key {key!r}")
    need(cfg["format"] == "lockstep-chip", f"configuration: format {cfg['format']!r}, expected 'lockstep-chip'")
    need(cfg["format_version"] in (1, 2) and is_int(cfg["format_version"]),
         f"configuration: format_version {cfg['format_version']!r} (this reader accepts 1 and 2)")
    need(cfg["spec_version"] == "chip-format/1", f"configuration: spec_version {cfg['spec_version']!r}")
    need(isinstance(cfg["compiler"], str), "configuration: compiler is not a string")
    need(is_int(cfg["d_model"]) and cfg["d_model"] >= 1, "configuration: d_model must be an integer >= 1")
    need(is_int(cfg["vocab_size"]) and cfg["vocab_size"] >= 1, "configuration: vocab_size must be an integer >= 1")
    need(cfg["number_format"] in FORMATS, f"configuration: unknown number_format {cfg['number_format']!r}")
    D, T = cfg["d_model"], cfg["vocab_size"]
    for key in ("layers", "fields", "probes", "bounds", "initialisers"):
        need(isinstance(cfg[key], list), f"configuration: {key} is not a list")
    L = len(cfg["layers"])
    for l, layer in enumerate(cfg["layers"]):
        where = f"layer {l}"
        need(isinstance(layer, dict), f"{where}: not an object")
        need(layer.get("format") in FORMATS, f"{where}: unknown format {layer.get('format')!r}")
        need(isinstance(layer.get("heads"), list), f"{where}: heads is not a list")
        for h, head in enumerate(layer["heads"]):
            need(isinstance(head, dict), f"{where} head {h}: not an object")
            for key in ("key_dim", "value_dim"):
                need(is_int(head.get(key)) and head[key] >= 1, f"{where} head {h}: {key} must be an integer >= 1")
            for key in ("act_k", "act_q", "act_beta"):
                need(head.get(key) in ACTS, f"{where} head {h}: unknown {key} {head.get(key)!r}")
        mlp = layer.get("mlp")
        need(isinstance(mlp, dict), f"{where}: mlp is not an object")
        need(mlp.get("kind") in MLP_KINDS, f"{where}: unknown mlp kind {mlp.get('kind')!r}")
        need(is_int(mlp.get("hidden")) and mlp["hidden"] >= 0, f"{where}: mlp hidden must be an integer >= 0")
        need(mlp["kind"] != "none" or mlp["hidden"] == 0, f"{where}: mlp kind none with hidden {mlp['hidden']}")
    names = set()
    for i, f in enumerate(cfg["fields"]):
        need(isinstance(f, dict) and isinstance(f.get("name"), str), f"field {i}: no name")
        need(f["name"] not in names, f"field {f['name']!r}: name used twice")
        names.add(f["name"])
        need(is_int(f.get("offset")) and is_int(f.get("width")) and f["offset"] >= 0 and f["width"] >= 1
             and f["offset"] + f["width"] <= D, f"field {f['name']!r}: range outside d_model {D}")
    for i, p in enumerate(cfg["probes"]):
        need(isinstance(p, dict) and p.get("after") in AFTER, f"probe {i}: unknown after {p.get('after')!r}")
        need(is_int(p.get("layer")), f"probe {i}: layer is not an integer")
        if p["after"] == "embed":
            need(p["layer"] == -1, f"probe {i}: after embed needs layer -1")
        else:
            need(0 <= p["layer"] < L, f"probe {i}: layer {p['layer']} out of range")
        need(isinstance(p.get("fields"), list) and all(n in names for n in p["fields"]),
             f"probe {i}: names a field that does not exist")
    for i, b in enumerate(cfg["bounds"]):
        need(isinstance(b, dict) and b.get("activation") in ACTIVATIONS,
             f"bound {i}: unknown activation {b.get('activation') if isinstance(b, dict) else b!r}")
        need(is_int(b.get("layer")), f"bound {i}: layer is not an integer")
        if b["activation"] in CHIP_WIDE_ACTIVATIONS:
            need(b["layer"] == -1, f"bound {i}: {b['activation']} needs layer -1")
        else:
            need(0 <= b["layer"] < L, f"bound {i}: layer {b['layer']} out of range")
        need(isinstance(b.get("bound"), (int, float)) and not isinstance(b.get("bound"), bool)
             and math.isfinite(b["bound"]) and b["bound"] >= 0, f"bound {i}: bound must be a finite number >= 0")
        need(is_int(b.get("frac_bits")) and b["frac_bits"] >= 0, f"bound {i}: frac_bits must be an integer >= 0")
    for i, init in enumerate(cfg["initialisers"]):
        _check_initialiser(cfg, i, init)
    tn = cfg.get("token_names", [])
    need(isinstance(tn, list) and (len(tn) == 0 or len(tn) == T), "token_names: neither empty nor vocab_size entries")
    need(isinstance(cfg.get("machine", ""), str), "configuration: machine is not a string")


def _check_initialiser(cfg, i, init) -> None:
    need(isinstance(init, dict), f"initialiser {i}: not an object")
    where = f"initialiser {i} ({init.get('name', '?')})"
    layers = cfg["layers"]
    need(is_int(init.get("layer")) and 0 <= init["layer"] < len(layers), f"{where}: layer out of range")
    heads = layers[init["layer"]]["heads"]
    need(is_int(init.get("head")) and 0 <= init["head"] < len(heads), f"{where}: head out of range")
    K, V = heads[init["head"]]["key_dim"], heads[init["head"]]["value_dim"]
    need(is_int(init.get("column")) and init["column"] >= 0, f"{where}: column must be an integer >= 0")
    need(is_int(init.get("row")) and init["row"] >= 0, f"{where}: row must be an integer >= 0")
    kind = init.get("kind")
    if kind == "const":
        vals = init.get("values")
        need(isinstance(vals, list) and len(vals) >= 1 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in vals),
            f"{where}: values must be a non-empty list of finite numbers")
        need(is_int(init.get("columns")) and init["columns"] >= 1, f"{where}: columns must be an integer >= 1")
        need(init["row"] + len(vals) <= V and init["column"] + init["columns"] <= K,
             f"{where}: target outside the head ({V} x {K})")
        return
    need(kind == "bytes", f"{where}: unknown kind {kind!r}")
    src = init.get("source")
    need(isinstance(src, dict), f"{where}: source is not an object")
    need(is_int(src.get("length")) and src["length"] >= 1, f"{where}: length must be an integer >= 1")
    need(is_int(src.get("stride", 1)) and src.get("stride", 1) >= 1, f"{where}: stride must be an integer >= 1")
    need(isinstance(src.get("optional", False), bool), f"{where}: optional must be a boolean")
    sk = src.get("kind")
    if sk == "image":
        need(is_int(src.get("address")) and src["address"] >= 0, f"{where}: address must be an integer >= 0")
    elif sk == "section":
        need(isinstance(src.get("name"), str), f"{where}: section source without a name")
        need(is_int(src.get("offset", 0)) and src.get("offset", 0) >= 0, f"{where}: offset must be an integer >= 0")
    elif sk == "entry":
        need(1 <= src["length"] <= 8, f"{where}: an entry source has 1 .. 8 bytes")
    else:
        need(False, f"{where}: unknown source kind {sk!r}")
    enc = init.get("encoding")
    need(enc in ENCODING_ROWS, f"{where}: unknown encoding {enc!r}")
    bpc = init.get("bytes_per_column")
    need(is_int(bpc) and bpc >= 1, f"{where}: bytes_per_column must be an integer >= 1")
    n = src["length"]
    last_row = init["row"] + (min(bpc, n) - 1) * ENCODING_ROWS[enc] + ENCODING_ROWS[enc] - 1
    last_col = init["column"] + (n - 1) // bpc
    need(last_row < V and last_col < K, f"{where}: target outside the head ({V} x {K})")


def map_shapes(cfg):
    """Every map name of §3.2 with its (rows, cols, number format)."""
    D, T = cfg["d_model"], cfg["vocab_size"]
    out = {"embed": (D, T, cfg["number_format"]), "unembed": (T, D, cfg["number_format"])}
    for l, layer in enumerate(cfg["layers"]):
        fmt = layer["format"]
        for h, head in enumerate(layer["heads"]):
            K, V = head["key_dim"], head["value_dim"]
            p = f"layers.{l}.heads.{h}."
            out[p + "k"] = (K, D, fmt)
            out[p + "q"] = (K, D, fmt)
            out[p + "v"] = (V, D, fmt)
            out[p + "beta"] = (1, D, fmt)
            out[p + "o"] = (D, V, fmt)
        mlp = layer["mlp"]
        F = mlp["hidden"]
        if mlp["kind"] == "relu":
            out[f"layers.{l}.mlp.w1"] = (F, D, fmt)
        elif mlp["kind"] == "gated":
            out[f"layers.{l}.mlp.wu"] = (F, D, fmt)
            out[f"layers.{l}.mlp.wg"] = (F, D, fmt)
        if mlp["kind"] != "none":
            out[f"layers.{l}.mlp.w2"] = (D, F, fmt)
    return out


def _representable(values, fmt) -> bool:
    if FORMATS[fmt] is None or values.numel() == 0:
        return True
    return bool((values.to(getattr(torch, FORMATS[fmt])).to(torch.float32) == values).all())


def read_chip(path):
    """Reads and validates a chip file (§3). Returns ``(config, maps, sha256 hex, config JSON)``
    with ``maps[name] = Map`` for every map name, aliases resolved. ChipFormatError otherwise,
    one line that starts with the path."""
    try:
        return _read_chip(path)
    except ChipFormatError as e:
        raise ChipFormatError(f"{path}: {e}") from None


def _read_chip(path):
    try:
        with open(path, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise ChipFormatError("not a regular file")
            data = bytearray(f.read())
    except OSError as e:
        raise ChipFormatError(f"cannot read it ({e.strerror or e})")
    digest = hashlib.sha256(data).hexdigest()
    need(len(data) >= 8, f"file of {len(data)} bytes is shorter than the 8-byte header length")
    (hlen,) = struct.unpack_from("<Q", data, 0)
    need(hlen <= len(data) - 8, f"header length {hlen} runs past the end of the file ({len(data)} bytes)")
    try:
        header = json.loads(bytes(data[8:8 + hlen]).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ChipFormatError(f"header is not valid JSON ({str(e).splitlines()[0]})")
    need(isinstance(header, dict), "header is not a JSON object")
    meta = header.pop("__metadata__", None)
    need(isinstance(meta, dict) and all(isinstance(v, str) for v in meta.values()),
         "__metadata__ missing or not an object of strings")
    need("lockstep.chip" in meta, "__metadata__ has no lockstep.chip configuration")
    config_json = meta["lockstep.chip"]
    try:
        cfg = json.loads(config_json)
    except ValueError as e:
        raise ChipFormatError(f"configuration is not valid JSON ({str(e).splitlines()[0]})")
    _check_config(cfg)
    base = 8 + hlen
    buffer_len = len(data) - base

    # Tensor entries: dtype, shape, offsets; contiguous and covering the buffer (§3).
    spans = []
    for name, e in header.items():
        need(isinstance(e, dict), f"tensor {name}: entry is not an object")
        need(e.get("dtype") in ("F32", "U32"), f"tensor {name}: unknown dtype {e.get('dtype')!r}")
        shape, offs = e.get("shape"), e.get("data_offsets")
        need(isinstance(shape, list) and len(shape) == 1 and is_int(shape[0]) and shape[0] >= 0,
             f"tensor {name}: shape {shape!r} is not one dimension")
        need(isinstance(offs, list) and len(offs) == 2 and all(is_int(o) for o in offs) and 0 <= offs[0] <= offs[1],
             f"tensor {name}: bad data_offsets {offs!r}")
        need(offs[1] - offs[0] == 4 * shape[0], f"tensor {name}: {offs[1] - offs[0]} bytes for shape {shape}")
        spans.append((offs[0], offs[1], name))
    spans.sort()
    at = 0
    for begin, end, name in spans:
        need(begin == at, f"tensor {name}: starts at {begin}, expected {at} (tensors must be contiguous)")
        at = end
    need(at == buffer_len, f"tensors cover {at} bytes of a {buffer_len}-byte data buffer")

    def tensor(name):
        e = header[name]
        n = e["shape"][0]
        if n == 0:
            return torch.empty(0, dtype=torch.float32 if e["dtype"] == "F32" else torch.int64)
        begin = base + e["data_offsets"][0]
        if e["dtype"] == "F32":
            return torch.frombuffer(data, dtype=torch.float32, count=n, offset=begin)
        return torch.frombuffer(data, dtype=torch.int32, count=n, offset=begin).to(torch.int64) & 0xFFFFFFFF

    def dtype_is(name, dt):
        need(header[name]["dtype"] == dt, f"tensor {name}: dtype {header[name]['dtype']}, expected {dt}")

    shapes = map_shapes(cfg)
    aliases = {}
    if "lockstep.map_aliases" in meta:
        try:
            aliases = json.loads(meta["lockstep.map_aliases"])
        except ValueError:
            raise ChipFormatError("lockstep.map_aliases is not valid JSON")
        need(isinstance(aliases, dict) and all(isinstance(v, str) for v in aliases.values()),
             "lockstep.map_aliases is not an object of map names")
    parts = ("row_idx", "values", "bias_idx", "bias_values")
    expected = set()
    for name in shapes:
        if name in aliases:
            continue
        expected.update(f"{name}.{p}" for p in parts)
    for name in header:
        stem, _, part = name.rpartition(".")
        ok = stem in shapes and stem not in aliases and (part in parts or part in ("col_ptr", "col_idx"))
        need(ok, f"unknown tensor {name}")
    for t in sorted(expected):
        need(t in header, f"missing tensor {t}")

    maps = {}
    for name, (rows, cols, fmt) in shapes.items():
        if name in aliases:
            continue
        has_ptr, has_idx = f"{name}.col_ptr" in header, f"{name}.col_idx" in header
        need(has_ptr != has_idx, f"map {name}: needs exactly one of col_ptr and col_idx")
        need(not has_idx or cfg["format_version"] >= 2, f"map {name}: col_idx in a version-1 file")
        for p in ("row_idx", "bias_idx"):
            dtype_is(f"{name}.{p}", "U32")
        for p in ("values", "bias_values"):
            dtype_is(f"{name}.{p}", "F32")
        row, val = tensor(f"{name}.row_idx"), tensor(f"{name}.values")
        nnz = row.numel()
        need(val.numel() == nnz, f"map {name}: {val.numel()} values for {nnz} row indices")
        if has_ptr:
            dtype_is(f"{name}.col_ptr", "U32")
            ptr = tensor(f"{name}.col_ptr")
            need(ptr.numel() == cols + 1, f"map {name}: col_ptr has {ptr.numel()} entries, expected {cols + 1}")
            need(int(ptr[0]) == 0 and int(ptr[-1]) == nnz, f"map {name}: col_ptr must start at 0 and end at nnz {nnz}")
            lens = ptr[1:] - ptr[:-1]
            need(bool((lens >= 0).all()), f"map {name}: col_ptr decreases")
            col = torch.repeat_interleave(torch.arange(cols, dtype=torch.int64), lens)
        else:
            dtype_is(f"{name}.col_idx", "U32")
            col = tensor(f"{name}.col_idx")
            need(col.numel() == nnz, f"map {name}: col_idx has {col.numel()} entries for {nnz} values")
            need(nnz == 0 or (bool((col[1:] >= col[:-1]).all()) and int(col[-1]) < cols),
                 f"map {name}: col_idx not non-decreasing or >= cols {cols}")
        need(nnz == 0 or int(row.max()) < rows, f"map {name}: a row index >= rows {rows}")
        same = col[1:] == col[:-1]
        need(bool((row[1:][same] > row[:-1][same]).all()), f"map {name}: row indices not strictly increasing in a column")
        need(bool(torch.isfinite(val).all()), f"map {name}: a value is not finite")
        bidx, bval = tensor(f"{name}.bias_idx"), tensor(f"{name}.bias_values")
        need(bidx.numel() == bval.numel(), f"map {name}: {bval.numel()} bias values for {bidx.numel()} bias rows")
        need(bidx.numel() == 0 or (bool((bidx[1:] > bidx[:-1]).all()) and int(bidx[-1]) < rows),
             f"map {name}: bias rows not strictly increasing or >= rows {rows}")
        need(bool(torch.isfinite(bval).all()), f"map {name}: a bias value is not finite")
        need(_representable(val, fmt) and _representable(bval, fmt),
             f"map {name}: a weight or bias is not exactly representable in {fmt}")
        maps[name] = Map(name, rows, cols, col, row, val.clone(), bidx, bval.clone())
    need(maps["embed"].bias_idx.numel() == 0, "map embed: the embedding's bias must be empty")
    for alias, stored in aliases.items():
        need(alias in shapes, f"lockstep.map_aliases: unknown map {alias}")
        need(stored in maps, f"lockstep.map_aliases: {alias} -> {stored}, which is not a stored map")
        need(shapes[alias][:2] == shapes[stored][:2], f"lockstep.map_aliases: {alias} and {stored} differ in shape")
        s = maps[stored]
        need(_representable(s.val, shapes[alias][2]) and _representable(s.bias_val, shapes[alias][2]),
             f"map {alias}: a weight or bias is not exactly representable in {shapes[alias][2]}")
        maps[alias] = Map(alias, s.rows, s.cols, s.col, s.row, s.val, s.bias_idx, s.bias_val)
    return cfg, maps, digest, config_json


# ---------------------------------------------------------------------------------------------
# The executor (chip-format.md §1.2, §2)

class Csc:
    """A stacked map on the device, by column: ``ptr`` (cols + 1), ``row``, ``val``; its dense
    ``bias`` (rows), the rows that are live without any input (``live``: a non-zero bias under
    identity, a positive one under ReLU) and the rows under ReLU (``relu``)."""

    def __init__(self, device, rows, cols, col, row, val, bias, relu):
        order = torch.argsort(col, stable=True) if col.numel() else col
        col, row, val = col[order], row[order], val[order]
        counts = torch.bincount(col, minlength=cols) if col.numel() else torch.zeros(cols, dtype=torch.int64)
        ptr = torch.zeros(cols + 1, dtype=torch.int64)
        ptr[1:] = torch.cumsum(counts, 0)
        self.rows, self.cols = rows, cols
        self.ptr, self.row, self.val = ptr.to(device), row.to(device), val.to(device)
        self.lo, self.cnt = ptr[:-1].to(device), counts.to(device)
        self.bias = bias.to(device)
        relu = relu if isinstance(relu, torch.Tensor) else torch.full((rows,), bool(relu))
        live = ((bias != 0) & ~relu) | ((bias > 0) & relu)
        self.live = torch.nonzero(live).flatten().to(device)
        self.live_bias = bias[live].to(device)
        self.relu = relu.to(device)
        self.any_relu = bool(relu.any())
        self.all_relu = bool(relu.all())


def _coo(m: Map, row_off=0, col_off=0):
    return m.col + col_off, m.row + row_off, m.val


def _concat(parts):
    if not parts:
        z = torch.zeros(0, dtype=torch.int64)
        return z, z, torch.zeros(0)
    return tuple(torch.cat([p[i] for p in parts]) for i in range(3))


class Layer:
    """One layer's stacked tensors: the memory block's ``inp`` map (rows: every head's k, then
    every head's q, v, beta), the per-key-row state addressing, the ``o`` map over every head's
    value space, and the MLP maps."""


class Executor:
    """The layer math of §1.2 for a batch of streams, with the state of every stream on ``device``.

    ``streams(n)`` makes ``n`` zeroed streams; ``reset(s, image)`` applies §2's initialisers;
    ``step(streams, tokens)`` runs one step of each listed stream and returns the predicted ids.
    """

    def __init__(self, cfg, maps, device="cpu"):
        self.cfg, self.device = cfg, torch.device(device)
        dev = self.device
        self.D, self.T = cfg["d_model"], cfg["vocab_size"]
        D, T = self.D, self.T
        self.layers = []
        for l, lc in enumerate(cfg["layers"]):
            L = Layer()
            heads = lc["heads"]
            L.H = len(heads)
            Ks = [h["key_dim"] for h in heads]
            Vs = [h["value_dim"] for h in heads]
            L.Kt, L.Vt = sum(Ks), sum(Vs)
            L.state_size = sum(k * v for k, v in zip(Ks, Vs))
            L.heads = []  # (K, V, state offset) per head
            if L.H:
                koff = voff = soff = 0
                parts = []
                o_parts = []
                o_bias = torch.zeros(D)
                kbase, klen, kvoff, vhead = [], [], [], []
                # row blocks: k rows [0, Kt), q rows [Kt, 2Kt), v rows [2Kt, 2Kt+Vt), beta rows after
                blocks = {"k": 0, "q": L.Kt, "v": 2 * L.Kt, "beta": 2 * L.Kt + L.Vt}
                R = 2 * L.Kt + L.Vt + L.H
                bias = torch.zeros(R)
                relu = torch.zeros(R, dtype=torch.bool)
                for h, hc in enumerate(heads):
                    K, V = Ks[h], Vs[h]
                    p = f"layers.{l}.heads.{h}."
                    offs = {"k": blocks["k"] + koff, "q": blocks["q"] + koff,
                            "v": blocks["v"] + voff, "beta": blocks["beta"] + h}
                    acts = {"k": hc["act_k"], "q": hc["act_q"], "v": "identity", "beta": hc["act_beta"]}
                    for part, off in offs.items():
                        m = maps[p + part]
                        parts.append(_coo(m, row_off=off))
                        bias[m.bias_idx + off] = m.bias_val
                        if acts[part] == "relu":
                            relu[off:off + m.rows] = True
                    om = maps[p + "o"]
                    o_parts.append(_coo(om, col_off=voff))
                    o_bias.index_add_(0, om.bias_idx, om.bias_val)
                    kbase.append(soff + torch.arange(K, dtype=torch.int64) * V)
                    klen.append(torch.full((K,), V, dtype=torch.int64))
                    kvoff.append(torch.full((K,), voff, dtype=torch.int64))
                    vhead.append(torch.full((V,), h, dtype=torch.int64))
                    L.heads.append((K, V, soff))
                    koff += K
                    voff += V
                    soff += K * V
                col, row, val = _concat(parts)
                L.inp = Csc(dev, R, D, col, row, val, bias, relu)
                col, row, val = _concat(o_parts)
                L.o = Csc(dev, D, L.Vt, col, row, val, o_bias, False)
                L.kbase = torch.cat(kbase).to(dev)
                L.klen = torch.cat(klen).to(dev)
                L.kvoff = torch.cat(kvoff).to(dev)
                L.vhead = torch.cat(vhead).to(dev)
            mlp = lc["mlp"]
            L.mlp = mlp["kind"]
            L.F = mlp["hidden"]
            if L.mlp == "relu":
                m = maps[f"layers.{l}.mlp.w1"]
                bias = torch.zeros(L.F)
                bias[m.bias_idx] = m.bias_val
                L.w1 = Csc(dev, L.F, D, m.col, m.row, m.val, bias, True)
            elif L.mlp == "gated":
                mu, mg = maps[f"layers.{l}.mlp.wu"], maps[f"layers.{l}.mlp.wg"]
                bias = torch.zeros(2 * L.F)
                bias[mu.bias_idx] = mu.bias_val
                bias[mg.bias_idx + L.F] = mg.bias_val
                relu = torch.zeros(2 * L.F, dtype=torch.bool)
                relu[L.F:] = True
                col, row, val = _concat([_coo(mu), _coo(mg, row_off=L.F)])
                L.w1 = Csc(dev, 2 * L.F, D, col, row, val, bias, relu)
            if L.mlp != "none":
                m = maps[f"layers.{l}.mlp.w2"]
                bias = torch.zeros(D)
                bias[m.bias_idx] = m.bias_val
                L.w2 = Csc(dev, D, L.F, m.col, m.row, m.val, bias, False)
            self.layers.append(L)
        m = maps["embed"]
        self.embed = Csc(dev, D, T, m.col, m.row, m.val, torch.zeros(D), False)
        m = maps["unembed"]
        bias = torch.zeros(T)
        bias[m.bias_idx] = m.bias_val
        self.unembed = Csc(dev, T, D, m.col, m.row, m.val, bias, False)
        self.token_ids = torch.arange(T, device=dev)
        self._scratch = torch.zeros(0, device=dev)
        self._init_plan()
        self.state = [None] * len(self.layers)
        self.n_streams = 0
        self.steps = []
        self.record_points = None  # set of (layer, after) to snapshot, or None
        self.snapshots = {}  # stream -> {(layer, after): (keys, vals, n, p)} of its last recorded step

    # -- state --------------------------------------------------------------------------------

    def _init_plan(self):
        """Per initialiser (§2), the flat state positions it writes, in file order."""
        self.plan = []
        for init in self.cfg["initialisers"]:
            L = self.layers[init["layer"]]
            K, V, soff = L.heads[init["head"]]
            col0, row0 = init["column"], init["row"]
            if init["kind"] == "const":
                vals = torch.tensor(init["values"], dtype=torch.float32)
                cols = torch.arange(col0, col0 + init["columns"], dtype=torch.int64)
                pos = soff + cols[:, None] * V + row0 + torch.arange(len(vals))[None, :]
                self.plan.append((init, pos.flatten().to(self.device),
                                  vals.repeat(init["columns"]).to(self.device)))
                continue
            n, bpc = init["source"]["length"], init["bytes_per_column"]
            R = ENCODING_ROWS[init["encoding"]]
            i = torch.arange(n, dtype=torch.int64)
            base = soff + (col0 + i // bpc) * V + row0 + (i % bpc) * R
            pos = base[:, None] + torch.arange(R, dtype=torch.int64)[None, :]
            self.plan.append((init, pos.flatten().to(self.device), None))

    def streams(self, n):
        """Drops every stream and makes ``n`` streams of zero state."""
        self.state = [None] * len(self.layers)
        self.snapshots = {}
        self.n_streams = n
        for l, L in enumerate(self.layers):
            self.state[l] = torch.zeros((n, L.state_size), device=self.device) if n and L.state_size else None
        self.steps = [0] * n

    @staticmethod
    def _source_bytes(image, src):
        n, stride = src["length"], src.get("stride", 1)
        if src["kind"] == "image":
            return image.memory(src["address"], n, stride)
        if src["kind"] == "entry":
            return (image.entry & ((1 << 64) - 1)).to_bytes(8, "little")[:n]
        data = image.sections.get(src["name"])
        if data is None:
            if src.get("optional", False):
                return bytes(n)
            raise lockstep_dut.ImageError(f"the guest image has no section {src['name']}")
        off = src.get("offset", 0)
        picked = data[off:off + (n - 1) * stride + 1:stride]
        return bytes(picked) + bytes(n - len(picked))

    def reset(self, stream, image):
        """§2: zero state, step count 0, then every initialiser in file order."""
        for S in self.state:
            if S is not None:
                S[stream].zero_()
        self.steps[stream] = 0
        self.snapshots.pop(stream, None)
        for init, pos, vals in self.plan:
            S = self.state[init["layer"]][stream]
            if vals is None:
                raw = self._source_bytes(image, init["source"])
                b = torch.frombuffer(bytearray(raw), dtype=torch.uint8).to(self.device).to(torch.int64)
                enc = init["encoding"]
                if enc == "scalar":
                    vals_ = b.to(torch.float32)
                elif enc == "bits":
                    vals_ = ((b[:, None] >> torch.arange(8, device=self.device)[None, :]) & 1).to(torch.float32)
                elif enc == "onehot":
                    vals_ = (b[:, None] == torch.arange(256, device=self.device)[None, :]).to(torch.float32)
                else:  # nibbles
                    j = torch.arange(16, device=self.device)[None, :]
                    vals_ = torch.cat([(b[:, None] % 16) == j, (b[:, None] // 16) == j], 1).to(torch.float32)
                S[pos] = vals_.flatten()
            else:
                S[pos] = vals

    def state_floats(self, stream):
        """The stream's state floats in §2.1's hash order, as one CPU tensor."""
        parts = [S[stream].cpu() for S in self.state if S is not None]
        return torch.cat(parts) if parts else torch.zeros(0)

    def load_state(self, stream, floats):
        at = 0
        for S in self.state:
            if S is not None:
                n = S.shape[1]
                S[stream] = floats[at:at + n].to(self.device)
                at += n

    # -- sparse layer math ---------------------------------------------------------------------

    def _ranges(self, start, count, *carry, total=None):
        """The ranges ``[start_i, start_i + count_i)`` concatenated: their positions, and each
        ``carry`` tensor with its element ``i`` repeated ``count_i`` times."""
        if total is None:
            total = int(count.sum())
        first = torch.cumsum(count, 0) - count
        pos = torch.repeat_interleave(start - first, count, output_size=total) + torch.arange(total, device=self.device)
        return pos, [torch.repeat_interleave(c, count, output_size=total) for c in carry]

    def _gather(self, m: Csc, keys, vals, n):
        """The terms ``W[:, j] * x_j`` of ``W x`` for sparse ``x`` (keys ``j * n + p``): their
        output keys ``row * n + p`` and values (not yet summed, no bias)."""
        j = keys if n == 1 else torch.div(keys, n, rounding_mode="floor")
        count = m.cnt.index_select(0, j)
        total = int(count.sum())
        if total == 0:  # x has no non-zero value in a column the map reads
            return keys[:0], vals[:0]
        start = m.lo.index_select(0, j)
        if n == 1:
            pos, (w,) = self._ranges(start, count, vals, total=total)
            return m.row.index_select(0, pos), m.val.index_select(0, pos) * w
        pos, (w, p) = self._ranges(start, count, vals, keys - j * n, total=total)
        return m.row.index_select(0, pos) * n + p, m.val.index_select(0, pos) * w

    def _live(self, m: Csc, n):
        """Keys of ``m``'s live rows for every batch position, live-row major."""
        if n == 1:
            return m.live
        return (m.live[:, None] * n + torch.arange(n, device=self.device)[None, :]).flatten()

    def _sum(self, keys, vals, space):
        """Equal keys (``0 <= key < space``) summed: each key once, with its sum, in no
        particular order. The sums go through a zeroed scratch buffer (``index_add_``), and one
        occurrence of each key is picked by writing every entry's position there and keeping the
        entries that read their own position back; the buffer is zero again afterwards.
        (``torch.unique`` would do, but is far slower on the CPU.)"""
        if keys.numel() >= 1 << 24:  # positions must be exact in fp32
            uk, inv = torch.unique(keys, return_inverse=True)
            return uk, torch.zeros(uk.numel(), device=self.device).index_add_(0, inv, vals)
        if self._scratch.numel() < space:
            self._scratch = torch.zeros(space, device=self.device)
        sc = self._scratch
        sc.index_add_(0, keys, vals)
        sums = sc.index_select(0, keys)
        at = torch.arange(keys.numel(), device=self.device, dtype=torch.float32)
        sc.index_put_((keys,), at)
        first = torch.nonzero(sc.index_select(0, keys) == at).flatten()
        sc.index_fill_(0, keys, 0.0)
        return keys.index_select(0, first), sums.index_select(0, first)

    @staticmethod
    def _nonzero(keys, vals):
        nz = torch.nonzero(vals).flatten()
        return keys.index_select(0, nz), vals.index_select(0, nz)

    def _rows(self, keys, n):
        return keys if n == 1 else torch.div(keys, n, rounding_mode="floor")

    def _affine(self, m: Csc, keys, vals, n):
        """``act(W x + b)`` as sparse (sorted keys, values): only the non-zero outputs."""
        k, v = self._gather(m, keys, vals, n)
        if k.numel() == 0 and m.live.numel() == 0:
            return k, v  # no input reaches the map: every output is act(0) = 0
        if m.live.numel():
            lk = self._live(m, n)
            k, v = torch.cat([k, lk]), torch.cat([v, torch.zeros(lk.numel(), device=self.device)])
        k, v = self._sum(k, v, m.rows * n)
        rows = self._rows(k, n)
        v = v + m.bias.index_select(0, rows)
        if m.all_relu:
            v = torch.clamp_min(v, 0)
        elif m.any_relu:
            v = torch.where(m.relu.index_select(0, rows), torch.clamp_min(v, 0), v)
        return self._nonzero(k, v)

    def _residual(self, m: Csc, keys, vals, xk, xv, n):
        """``x + W y + b``: the new sparse residual (non-zero entries only)."""
        k, v = self._gather(m, keys, vals, n)
        if k.numel() == 0 and m.live.numel() == 0:
            return xk, xv  # nothing added
        parts_k, parts_v = [xk, k], [xv, v]
        if m.live.numel():
            parts_k.append(self._live(m, n))
            parts_v.append(m.live_bias if n == 1 else m.live_bias.repeat_interleave(n))
        k, v = self._sum(torch.cat(parts_k), torch.cat(parts_v), m.rows * n)
        return self._nonzero(k, v)

    def _memory(self, l, L, xk, xv, sid, n):
        """The memory block of layer ``l`` (§1.2): every head reads x, updates its state, reads it."""
        S = self.state[l].view(-1)
        k, v = self._affine(L.inp, xk, xv, n)
        if k.numel() == 0 and L.o.live.numel() == 0:
            return xk, xv  # k = q = v = beta = 0: no state change, o = 0
        Kt, Vt, H = L.Kt, L.Vt, L.H
        k, order = torch.sort(k)
        v = v.index_select(0, order)
        cut = torch.tensor([Kt * n, 2 * Kt * n, (2 * Kt + Vt) * n], device=self.device)
        a, b, c = torch.searchsorted(k, cut).tolist()
        rows = self._rows(k, n)
        p = k - rows * n
        dev = self.device
        stream_base = sid * L.state_size

        def columns(lo, hi, off):
            """For the k (or q) entries [lo, hi): every state element of the columns they
            select, its (batch position, value row) index, and the entry's value."""
            g = rows[lo:hi] - off
            pp = p[lo:hi]
            start = stream_base.index_select(0, pp) + L.kbase.index_select(0, g)
            pos, (r0, vrow0, val) = self._ranges(start, L.klen.index_select(0, g), start,
                                                 pp * Vt + L.kvoff.index_select(0, g), v[lo:hi])
            return pos, vrow0 + (pos - r0), val

        if a:  # update first: S <- S + beta (v - S k) k^T, on the columns k selects
            # v and beta, dense over (batch position, value row) and (batch position, head)
            vd = torch.zeros(n * Vt, device=dev)
            vd[p[b:c] * Vt + rows[b:c] - 2 * Kt] = v[b:c]
            bd = torch.zeros(n * H, device=dev)
            bd[p[c:] * H + rows[c:] - 2 * Kt - Vt] = v[c:]
            si, vi, kval = columns(0, a, 0)
            Sk = torch.zeros(n * Vt, device=dev).index_add_(0, vi, S.index_select(0, si) * kval)
            delta = (vd - Sk) * bd.view(n, H).index_select(1, L.vhead).reshape(-1)
            S.index_add_(0, si, delta.index_select(0, vi) * kval)
        if a == b:  # q = 0: o = 0
            return self._residual(L.o, k[:0], v[:0], xk, xv, n)
        # then read: o = S q on the columns q selects (it sees this step's write); o is only
        # summed through W_o, so its terms need not be combined first
        si, vi, qval = columns(a, b, Kt)
        vrow = vi
        if n > 1:
            pq = torch.div(vi, Vt, rounding_mode="floor")
            vrow = (vi - pq * Vt) * n + pq
        return self._residual(L.o, vrow, S.index_select(0, si) * qval, xk, xv, n)

    def _mlp(self, L, xk, xv, n):
        hk, hv = self._affine(L.w1, xk, xv, n)
        if L.mlp == "gated":
            F = L.F
            hk, order = torch.sort(hk)
            hv = hv.index_select(0, order)
            cut = int(torch.searchsorted(hk, torch.tensor([F * n], device=self.device)))
            uk, uv, gk, gv = hk[:cut], hv[:cut], hk[cut:] - F * n, hv[cut:]
            if uk.numel() and gk.numel():
                at = torch.searchsorted(uk, gk).clamp_max(uk.numel() - 1)
                hit = torch.nonzero(uk.index_select(0, at) == gk).flatten()
                hk, hv = self._nonzero(gk.index_select(0, hit), uv.index_select(0, at.index_select(0, hit)) * gv.index_select(0, hit))
            else:
                hk, hv = gk[:0], gv[:0]
        return self._residual(L.w2, hk, hv, xk, xv, n)

    def step(self, sid, tokens):
        """One step (§1.2) of the streams ``sid`` (LongTensor on the device) fed ``tokens``
        (LongTensor): returns the predicted ids (LongTensor). Records the probe points' residuals
        when ``record_points`` is set."""
        n = sid.numel()
        dev = self.device
        e = self.embed
        pos, (p,) = self._ranges(e.lo.index_select(0, tokens), e.cnt.index_select(0, tokens),
                                 torch.arange(n, device=dev))
        xk = e.row.index_select(0, pos) * n + p  # x = E[:, t]: distinct rows
        xk, xv = self._nonzero(xk, e.val.index_select(0, pos))
        snaps = {} if self.record_points is not None else None
        if snaps is not None and (-1, AFTER_EMBED) in self.record_points:
            snaps[(-1, AFTER_EMBED)] = (xk, xv)
        for l, L in enumerate(self.layers):
            if L.H:
                xk, xv = self._memory(l, L, xk, xv, sid, n)
                if snaps is not None and (l, AFTER_MEMORY) in self.record_points:
                    snaps[(l, AFTER_MEMORY)] = (xk, xv)
            if L.mlp != "none":
                xk, xv = self._mlp(L, xk, xv, n)
                if snaps is not None and (l, AFTER_MLP) in self.record_points:
                    snaps[(l, AFTER_MLP)] = (xk, xv)
        k, v = self._gather(self.unembed, xk, xv, n)
        rows = self._rows(k, n)
        logits = self.unembed.bias.repeat(n)
        logits.index_add_(0, (k - rows * n) * self.T + rows, v)
        logits = torch.nan_to_num(logits.view(n, self.T), nan=-math.inf)
        best = logits.max(dim=1, keepdim=True).values
        # argmax; on a tie the lowest token id wins (and a row of NaN gives 0)
        pred = torch.where(logits == best, self.token_ids[None, :], self.T).min(dim=1).values
        pred = torch.where(pred >= self.T, torch.zeros_like(pred), pred)
        if snaps is not None:
            for p, s in enumerate(sid.tolist()):
                self.snapshots[s] = (snaps, n, p)
        return pred

    def probe(self, stream, layer, after, offset, width):
        """The residual's values ``[offset, offset + width)`` at a probe point of the stream's
        last recorded step."""
        snaps, n, p = self.snapshots[stream]
        xk, xv = snaps[(layer, after)]
        rows = xk // n
        sel = (xk - rows * n == p) & (rows >= offset) & (rows < offset + width)
        out = torch.zeros(width)
        out[(rows[sel] - offset).cpu()] = xv[sel].cpu()
        return out.tolist()


# ---------------------------------------------------------------------------------------------
# The chip under test (lockstep_dut's chip object)

CHECKPOINT_MAGIC = b"LKCS"


class TorchChip:
    """The chip object that ``lockstep_dut.serve`` drives (see lockstep_dut.server)."""

    def __init__(self, path, device="cpu", max_streams=64):
        cfg, maps, digest, config_json = read_chip(path)
        self.cfg = cfg
        self.ex = Executor(cfg, maps, device)
        self.vocab_size = cfg["vocab_size"]
        self.max_streams = max_streams
        self.name = f"torch_chip {VERSION} ({self.ex.device.type}, torch {torch.__version__})"
        self.identity = f"torch_chip/{VERSION} sha256:{digest}"
        self.fingerprint = int(digest[:16], 16)
        self.dev = self.ex.device
        self._probe_map = self._build_probe_map(maps)
        self._points = {(p.layer, p.after) for p in self._probe_map.points}
        if xxhash is None:
            self.hash = None  # no HASH capability without XXH3 (chip-format.md §2.1)

    # streams and steps
    def streams(self, n):
        self.ex.streams(n)

    def reset(self, stream, image):
        self.ex.reset(stream, image)

    def _run(self, sid_list, tokens):
        sid = torch.tensor(sid_list, dtype=torch.int64, device=self.dev)
        pred = self.ex.step(sid, tokens)
        for s in sid_list:
            self.ex.steps[s] += 1
        return pred

    def step(self, inputs):
        tokens = torch.tensor([t for _, t in inputs], dtype=torch.int64, device=self.dev)
        return self._run([s for s, _ in inputs], tokens).tolist()

    def forced(self, entries):
        outs = [[] for _ in entries]
        longest = max(len(i) for _, i in entries)
        for i in range(longest):
            live = [k for k, (_, inputs) in enumerate(entries) if i < len(inputs)]
            tokens = torch.tensor([entries[k][1][i] for k in live], dtype=torch.int64, device=self.dev)
            pred = self._run([entries[k][0] for k in live], tokens).tolist()
            for k, t in zip(live, pred):
                outs[k].append(t)
        return outs

    def free(self, entries):
        preds = []  # per step: (live entry indices, tensor of predictions)
        counts = [c for _, c, _ in entries]
        live = list(range(len(entries)))
        tokens = torch.tensor([f for _, _, f in entries], dtype=torch.int64, device=self.dev)
        for i in range(max(counts)):
            still = [k for k in live if i < counts[k]]
            if len(still) != len(live):
                keep = torch.tensor([j for j, k in enumerate(live) if i < counts[k]], device=self.dev)
                tokens = tokens[keep]
                live = still
            tokens = self._run([entries[k][0] for k in live], tokens)
            preds.append((live, tokens))
        outs = [[] for _ in entries]
        for live, tokens in preds:
            for k, t in zip(live, tokens.tolist()):
                outs[k].append(t)
        return outs

    # probes (dut-protocol.md §3.7)
    def _build_probe_map(self, maps):
        cfg, D = self.cfg, self.cfg["d_model"]
        fields = [(f["name"], f["offset"], f["width"]) for f in cfg["fields"]]
        named = torch.zeros(D, dtype=torch.bool)
        for _, off, w in fields:
            named[off:off + w] = True
        u = maps["unembed"]
        read = torch.zeros(D, dtype=torch.bool)
        read[u.col] = True
        extra = (read & ~named).tolist()
        a = 0
        while a < D:  # maximal runs of unnamed dimensions that the unembedding reads
            if extra[a]:
                b = a
                while b < D and extra[b]:
                    b += 1
                fields.append((f"dims[{a}..{b})", a, b - a))
                a = b
            else:
                a += 1
        def prefix(mask):
            c = torch.zeros(D + 1, dtype=torch.int64)
            c[1:] = torch.cumsum(mask.to(torch.int64), 0)
            return c
        offs = torch.tensor([f[1] for f in fields], dtype=torch.int64)
        ends = offs + torch.tensor([f[2] for f in fields], dtype=torch.int64)
        def touches(mask):
            c = prefix(mask)
            return (c[ends] - c[offs] > 0).tolist()
        writers = [[] for _ in fields]
        for l, lc in enumerate(cfg["layers"]):
            subs = []
            if lc["heads"]:
                mask = torch.zeros(D, dtype=torch.bool)
                for h in range(len(lc["heads"])):
                    m = maps[f"layers.{l}.heads.{h}.o"]
                    mask[m.row] = True
                    mask[m.bias_idx[m.bias_val != 0]] = True
                subs.append((AFTER_MEMORY, mask))
            if lc["mlp"]["kind"] != "none":
                m = maps[f"layers.{l}.mlp.w2"]
                mask = torch.zeros(D, dtype=torch.bool)
                mask[m.row] = True
                mask[m.bias_idx[m.bias_val != 0]] = True
                subs.append((AFTER_MLP, mask))
            for sub, mask in subs:
                for i, hit in enumerate(touches(mask)):
                    if hit:
                        writers[i].append((l, sub))
        index = {f[0]: i for i, f in enumerate(fields)}
        self._fields = {f[0]: (f[1], f[2]) for f in fields}
        points = [ProbePoint(p["layer"], AFTER[p["after"]], [index[n] for n in p["fields"]]) for p in cfg["probes"]]
        return ProbeMap([ProbeField(f[0], f[2], writers[i]) for i, f in enumerate(fields)], points,
                        [i for i, hit in enumerate(touches(read)) if hit])

    def probe_map(self):
        return self._probe_map

    def probe_record(self, on):
        self.ex.record_points = set(self._points) if on else None

    def probe(self, stream, layer, after, field):
        offset, width = self._fields[field]
        return self.ex.probe(stream, layer, after, offset, width)

    # state hash and checkpoints (chip-format.md §2.1)
    def hash(self, stream):
        return xxhash.xxh3_64_intdigest(self.ex.state_floats(stream).numpy().tobytes())

    def save(self, stream):
        floats = self.ex.state_floats(stream)
        head = CHECKPOINT_MAGIC + struct.pack("<IQQQ", 1, self.fingerprint, self.ex.steps[stream], floats.numel())
        return head + floats.numpy().astype("<f4").tobytes()

    def restore(self, stream, blob):
        n_expected = sum(L.state_size for L in self.ex.layers)
        if len(blob) < 32 or blob[:4] != CHECKPOINT_MAGIC:
            raise lockstep_dut.ImageError("not a stream checkpoint (magic)")
        version, fingerprint, steps, n = struct.unpack_from("<IQQQ", blob, 4)
        if version != 1:
            raise lockstep_dut.ImageError(f"stream checkpoint version {version}, expected 1")
        if fingerprint != self.fingerprint:
            raise lockstep_dut.ImageError("the checkpoint is another chip's")
        if n != n_expected or len(blob) != 32 + 4 * n:
            raise lockstep_dut.ImageError(f"stream checkpoint of {n} floats in {len(blob)} bytes; "
                                          f"this chip has {n_expected}")
        floats = torch.frombuffer(bytearray(blob[32:]), dtype=torch.float32) if n else torch.zeros(0)
        if not bool(torch.isfinite(floats).all()):
            raise lockstep_dut.ImageError("the checkpoint holds a value that is not finite")
        self.ex.load_state(stream, floats)
        self.ex.steps[stream] = steps
        self.ex.snapshots.pop(stream, None)


def check_device(name):
    """``--device``: cpu, cuda or cuda:N of a device this PyTorch sees. SetupError otherwise
    (never another torch device type: they would not compute, or not exactly)."""
    m = re.fullmatch(r"cpu|cuda(?::(\d+))?", name)
    if not m:
        raise lockstep_dut.SetupError(f"--device {name}: unknown device (cpu, cuda or cuda:N)")
    if name == "cpu":
        return
    if not torch.cuda.is_available():
        raise lockstep_dut.SetupError(f"--device {name}: this PyTorch sees no CUDA device")
    n = torch.cuda.device_count()
    if m.group(1) is not None and int(m.group(1)) >= n:
        raise lockstep_dut.SetupError(f"--device {name}: this PyTorch sees {n} CUDA device"
                                      f"{'s' if n != 1 else ''} (cuda:0 .. cuda:{n - 1})")


def main(argv=None):
    parser = lockstep_dut.ArgumentParser(prog=PROG, description="A chip-format.md executor on PyTorch, "
                                         "served over lockstep-dut/1 (stdin/stdout by default).")
    parser.add_argument("chip", metavar="CHIP_FILE", help="compiled chip file (safetensors, chip-format.md §3)")
    parser.add_argument("--device", default="cpu", help="cpu | cuda | cuda:N (default cpu)")
    parser.add_argument("--max-streams", type=int, default=64,
                        help=f"largest batch of streams, 1 .. {MAX_STREAMS_LIMIT} (default 64)")
    lockstep_dut.add_arguments(parser)
    args = parser.parse_args(argv)
    if args.listen is None:
        lockstep_dut.protect_stdout()  # frames only on fd 1, before anything can print
    if torch is None:
        hint = "apt-get install python3-torch"
        if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3") and os.path.exists("/usr/bin/python3"):
            hint += ", then run it with /usr/bin/python3"
        raise lockstep_dut.SetupError(f"PyTorch is not installed for {sys.executable} (Debian: {hint})")
    if not 1 <= args.max_streams <= MAX_STREAMS_LIMIT:
        raise lockstep_dut.SetupError(f"--max-streams {args.max_streams}: must be 1 .. {MAX_STREAMS_LIMIT}")
    check_device(args.device)
    lockstep_dut.check_arguments(args)  # --listen, --token-file, --sessions: before the chip loads
    try:
        chip = TorchChip(args.chip, args.device, args.max_streams)
    except ChipFormatError as e:  # starts with the path
        raise lockstep_dut.SetupError(str(e))
    lockstep_dut.serve_from_args(chip, args)
    return 0


if __name__ == "__main__":
    lockstep_dut.run_main(PROG, main)  # bad input: one line "torch_chip: error: ...", exit 2
