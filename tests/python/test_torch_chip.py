"""python/examples/torch_chip.py against the reference model, token by token.

The reference's tokens come from ``lockstep ref GUEST --trace`` (trace.md §6); the guest image is
built as the engine builds it (lockstep_dut.load_elf); torch_chip is driven through
lockstep_dut.client over its stdin/stdout, teacher-forced (FORCED: inputs START, t_1, ...) and
free-running (FREE from START), all guests as one batch of streams. Its state hashes are
compared with the C++ CPU executor's (``lockstep run --hash-every``, summary.json).

``LOCKSTEP_TORCH_STEPS`` caps the steps of each guest (default 1,500; ctest's integration test:
300; the ``long`` test: 30,000, the whole directed guests and 30,000 steps of stories_vx).
Skips with one line where PyTorch is missing.
"""

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

import helpers
from lockstep_dut import load_elf
from lockstep_dut.client import ChipError, Client

try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

CAP = int(os.environ.get("LOCKSTEP_TORCH_STEPS", "1500"))
GUESTS = ["hello", "crc32", "muldiv", "vector_ops", "fd2", "stories_vx"]


def chip_client(chip=helpers.CHIP, *options):
    return Client.spawn([sys.executable, helpers.TORCH_CHIP, chip, *options], timeout=600)


@unittest.skipUnless(HAVE_TORCH, "PyTorch is not installed for this Python: torch_chip tests skipped")
class TorchChipExact(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for path in (helpers.CHIP, helpers.LOCKSTEP):
            if not os.path.exists(path):
                raise unittest.SkipTest(f"{path} is not built")
        cls.tmp = tempfile.mkdtemp(prefix="torch_chip_test.")
        cls.guests = [g for g in GUESTS if os.path.exists(helpers.guest(g))]
        cls.ref = {g: helpers.reference_trace(helpers.guest(g), os.path.join(cls.tmp, g + ".trace"), CAP)
                   for g in cls.guests}
        cls.images = {g: load_elf(helpers.guest(g)) for g in cls.guests}
        cls.c = chip_client()
        cls.info = cls.c.hello()

    @classmethod
    def tearDownClass(cls):
        if hasattr(cls, "c"):
            cls.c.bye()
            cls.assert_status = cls.c.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def assertSameTokens(self, guest, mode, got, expected):
        self.assertEqual(len(got), len(expected), f"{guest} {mode}: token count")
        for step, (a, e) in enumerate(zip(got, expected), start=1):
            if a != e:
                self.fail(f"{guest} {mode}: step {step}: expected id {e}, torch_chip predicted {a}")

    def test_handshake(self):
        self.assertEqual(self.info.vocab_size, 20736)
        self.assertGreaterEqual(self.info.max_streams, 2 * len(GUESTS))
        self.assertIn("torch_chip", self.info.name)
        self.assertTrue(self.info.identity.startswith("torch_chip/"))

    def test_every_guest_teacher_forced_and_free_running(self):
        n = len(self.guests)
        self.c.streams(2 * n)
        for i, g in enumerate(self.guests):
            self.c.reset(i, self.images[g])
            self.c.reset(n + i, self.images[g])
        # ragged: each guest a different number of steps, so streams leave the batch early
        ref = {g: self.ref[g][:len(self.ref[g]) - 25 * i] for i, g in enumerate(self.guests)}
        forced = self.c.forced([(i, [0] + ref[g][:-1]) for i, g in enumerate(self.guests)])
        free = self.c.free([(n + i, len(ref[g]), 0) for i, g in enumerate(self.guests)])
        for i, g in enumerate(self.guests):
            self.assertSameTokens(g, "teacher-forced", forced[i], ref[g])
            self.assertSameTokens(g, "free-running", free[i], ref[g])

    def test_state_hashes_match_the_cpu_executor(self):
        steps, every = 600, 200
        report = os.path.join(self.tmp, "hash-run")
        subprocess.run([helpers.LOCKSTEP, "run", helpers.guest("hello"), "--mode", "free", "--steps", str(steps),
                        "--hash-every", str(every), "--report", report], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(os.path.join(report, "summary.json")) as f:
            expected = {h["step"]: h["chip"] for h in json.load(f)["run"]["streams"][0]["hashes"]}
        self.assertEqual(sorted(expected), list(range(every, steps + 1, every)))
        self.c.streams(1)
        self.c.reset(0, self.images["hello"])
        token, got = 0, {}
        for step in range(every, steps + 1, every):
            token = self.c.free([(0, every, token)])[0][-1]
            got[step] = "%016x" % self.c.hash(0)
        self.assertEqual(got, expected)

    def test_save_restore_continues_exactly(self):
        ref = self.ref["crc32"]
        half = len(ref) // 2
        self.c.streams(2)
        self.c.reset(0, self.images["crc32"])
        self.c.forced([(0, [0] + ref[:half - 1])])
        blob = self.c.save(0)
        h = self.c.hash(0)
        self.c.reset(1, self.images["hello"])
        self.c.restore(1, blob)
        self.assertEqual(self.c.hash(1), h)
        rest = self.c.free([(1, len(ref) - half, ref[half - 1])])[0]
        self.assertSameTokens("crc32", "after restore", rest, ref[half:])
        for bad in (blob[:-4], b"LKCS" + bytes(28), blob[:8] + b"\x00" * 8 + blob[16:]):
            with self.assertRaises(ChipError) as cm:
                self.c.restore(0, bad)
            self.assertEqual(cm.exception.code, 4)

    def test_probes_show_the_embedding_and_name_the_writers(self):
        m = self.c.probe_map()
        names = [f.name for f in m.fields]
        self.assertEqual(m.points[0].layer, -1)
        self.assertTrue(m.unembed_reads)
        self.assertTrue(any(f.writers for f in m.fields))
        for f in m.fields:  # writers in execution order
            self.assertEqual(f.writers, sorted(f.writers), f.name)
        ref = self.ref["hello"]
        self.c.streams(1)
        self.c.reset(0, self.images["hello"])
        self.c.probe_record(True)
        self.c.forced([(0, [0, ref[0], ref[1]])])
        self.c.probe_record(False)
        # after the embedding, the fields hold E[:, t] of the last input, t = ref[1]
        import torch_chip
        cfg, maps, _, _ = torch_chip.read_chip(helpers.CHIP)
        e = maps["embed"]
        sel = (e.col == ref[1]).nonzero().flatten()
        column = dict(zip(e.row[sel].tolist(), e.val[sel].tolist()))
        point = m.points[0]
        for fi in point.fields:
            f = cfg["fields"][fi]
            got = self.c.probe(0, -1, 0, f["name"])
            want = [column.get(f["offset"] + i, 0.0) for i in range(f["width"])]
            self.assertEqual(got, want, f["name"])
        self.assertIn("kind", names)


@unittest.skipUnless(HAVE_TORCH, "PyTorch is not installed for this Python: torch_chip tests skipped")
class TorchChipCorrupted(unittest.TestCase):
    """A chip file with one weight changed diverges at the same step, with the same expected and
    actual tokens, through torch_chip as through the CPU executor (issue 26's acceptance)."""

    def test_same_divergence_as_the_cpu_executor(self):
        if not os.path.exists(helpers.CHIP):
            self.skipTest(f"{helpers.CHIP} is not built")
        with tempfile.TemporaryDirectory() as d:
            with open(helpers.CHIP, "rb") as f:
                data = bytearray(f.read())
            (n,) = struct.unpack_from("<Q", data)
            header = json.loads(data[8:8 + n])
            tensor, index = "layers.0.mlp.w2.values", 7  # diverges after about 120 steps of hello
            at = 8 + n + header[tensor]["data_offsets"][0] + 4 * index
            (value,) = struct.unpack_from("<f", data, at)
            struct.pack_into("<f", data, at, value + 1)
            bad = os.path.join(d, "corrupted.chip")
            with open(bad, "wb") as f:
                f.write(data)
            report = os.path.join(d, "run")
            r = subprocess.run([helpers.LOCKSTEP, "run", helpers.guest("hello"), "--chip", bad, "--mode", "forced",
                                "--report", report], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.assertEqual(r.returncode, 1, "the CPU executor should diverge on the corrupted chip")
            with open(os.path.join(report, "summary.json")) as f:
                div = json.load(f)["run"]["streams"][0]["divergence"]
            ref = helpers.reference_trace(helpers.guest("hello"), os.path.join(d, "hello.trace"), div["step"])
            c = chip_client(bad)
            try:
                c.hello()
                c.streams(1)
                c.reset(0, load_elf(helpers.guest("hello")))
                got = c.forced([(0, [0] + ref[:-1])])[0]
                c.bye()
            finally:
                c.close()
            first = next(((i + 1, e, a) for i, (e, a) in enumerate(zip(ref, got)) if e != a), None)
            self.assertEqual(first, (div["step"], div["expected"], div["actual"]),
                             f"{tensor}[{index}] {value} -> {value + 1}")
            # The same through the whole harness: `lockstep run --dut` reports the same divergence
            # (step, instruction, tokens) and, through torch_chip's probes, the same layer.
            report2 = os.path.join(d, "run-dut")
            r2 = subprocess.run([helpers.LOCKSTEP, "run", helpers.guest("hello"), "--mode", "forced", "--report",
                                 report2, "--dut", f"{sys.executable} {helpers.TORCH_CHIP} {bad}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            self.assertEqual(r2.returncode, 1, r2.stderr.decode())
            with open(os.path.join(report2, "summary.json")) as f:
                div2 = json.load(f)["run"]["streams"][0]["divergence"]
            for key in ("step", "pc", "word", "field", "expected", "actual", "fault"):
                self.assertEqual(div2[key], div[key], key)
            self.assertEqual(div2["attribution"]["status"], div["attribution"]["status"])
            self.assertEqual(div2["attribution"].get("layer"), div["attribution"].get("layer"))


@unittest.skipUnless(HAVE_TORCH, "PyTorch is not installed for this Python: torch_chip tests skipped")
class TorchChipThroughLockstep(unittest.TestCase):
    """`lockstep run --dut 'torch_chip CHIP'` gives the in-process run's steps and digest, both modes
    (issue 26's acceptance), LOCKSTEP_TORCH_STEPS steps of a scalar and a vector guest."""

    def test_directed_guests_both_modes(self):
        for path in (helpers.CHIP, helpers.LOCKSTEP):
            if not os.path.exists(path):
                self.skipTest(f"{path} is not built")
        dut = f"{sys.executable} {helpers.TORCH_CHIP} {helpers.CHIP}"
        for g in ("hello", "vector_ops"):  # scalar and vector steps (TorchChipExact covers the rest)
            if not os.path.exists(helpers.guest(g)):
                continue
            for mode in ("forced", "free"):
                common = ["run", helpers.guest(g), "--mode", mode, "--steps", str(CAP), "--json"]
                a = subprocess.run([helpers.LOCKSTEP, *common], capture_output=True)
                b = subprocess.run([helpers.LOCKSTEP, *common, "--dut", dut], capture_output=True)
                self.assertEqual(a.returncode, 0, a.stderr.decode())
                self.assertEqual(b.returncode, 0, b.stderr.decode())
                sa, sb = json.loads(a.stdout), json.loads(b.stdout)
                self.assertEqual((sb["status"], sb["steps"], sb["digest"]), ("exact", sa["steps"], sa["digest"]),
                                 f"{g} {mode}")


@unittest.skipUnless(HAVE_TORCH, "PyTorch is not installed for this Python: torch_chip tests skipped")
class TorchChipBadInput(unittest.TestCase):
    def run_chip(self, path, *options, python_prefix=()):
        return subprocess.run([sys.executable, *python_prefix, helpers.TORCH_CHIP, path, *options],
                              capture_output=True, timeout=300, stdin=subprocess.DEVNULL)

    def assertOneLineError(self, r, text):
        err = r.stderr.decode()
        self.assertEqual(r.returncode, 2, err)
        self.assertEqual(r.stdout, b"")
        lines = err.strip().splitlines()
        self.assertEqual(len(lines), 1, err)
        self.assertTrue(lines[0].startswith("torch_chip: error: "), err)
        self.assertIn(text, lines[0])

    def test_files_that_break_the_format(self):
        with tempfile.TemporaryDirectory() as d:
            def write(name, data):
                p = os.path.join(d, name)
                with open(p, "wb") as f:
                    f.write(data)
                return p
            self.assertOneLineError(self.run_chip(os.path.join(d, "absent.chip")), "cannot read")
            self.assertOneLineError(self.run_chip(write("short", b"\x01\x02")), "shorter than")
            self.assertOneLineError(self.run_chip(write("len", struct.pack("<Q", 99) + b"{}")), "runs past")
            self.assertOneLineError(self.run_chip(write("json", struct.pack("<Q", 2) + b"{x")), "not valid JSON")
            meta = {"__metadata__": {"lockstep.chip": json.dumps({"format": "lockstep-chip"})}}
            h = json.dumps(meta).encode()
            self.assertOneLineError(self.run_chip(write("cfg", struct.pack("<Q", len(h)) + h)), "missing key")
            if os.path.exists(helpers.CHIP):
                with open(helpers.CHIP, "rb") as f:
                    data = f.read()
                self.assertOneLineError(self.run_chip(write("cut", data[:-4])), "data buffer")
                (n,) = struct.unpack_from("<Q", data)
                header = json.loads(data[8:8 + n])
                # a row index out of range in the unembedding
                e = header["unembed.row_idx"]
                at = 8 + n + e["data_offsets"][0]
                bad = bytearray(data)
                bad[at:at + 4] = struct.pack("<I", 0xFFFFFF)
                self.assertOneLineError(self.run_chip(write("row", bytes(bad))), "row index")

    def test_no_cuda_is_one_line(self):
        if torch.cuda.is_available():
            self.skipTest("this machine has CUDA")
        self.assertOneLineError(self.run_chip(helpers.CHIP, "--device", "cuda"), "no CUDA device")


class TorchChipWithoutTorch(unittest.TestCase):
    """Runs everywhere: the example's answer where PyTorch cannot be imported."""

    def test_missing_torch_is_one_line(self):
        hide = ["-c", "import runpy, sys; sys.modules['torch'] = None; sys.argv = sys.argv[1:]; "
                "runpy.run_path(sys.argv[0], run_name='__main__')"]
        r = subprocess.run([sys.executable, *hide, helpers.TORCH_CHIP, "whatever.chip"],
                           capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
        err = r.stderr.decode().strip()
        self.assertEqual(r.returncode, 2, err)
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertTrue(err.startswith("torch_chip: error: PyTorch is not installed"), err)


if __name__ == "__main__":
    unittest.main()
