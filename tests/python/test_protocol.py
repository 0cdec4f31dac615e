"""Framing and messages of lockstep-dut/1 (docs/spec/dut-protocol.md §2, §3, §5): every
message round-trips, and every kind of malformed payload is refused before anything big is
allocated."""

import io
import struct
import unittest

import helpers  # noqa: F401  (sys.path)
from lockstep_dut import protocol as P


class RoundTrip(unittest.TestCase):
    def test_hello_and_hello_ok(self):
        h = P.Hello(1, "trace-v3", "s3cret")
        self.assertEqual(P.decode_hello(P.encode_hello(h)), h)
        ok = P.HelloOk(1, "trace-v3", 20736, 64, 0b1111, "toy é", "id")
        self.assertEqual(P.decode_hello_ok(P.encode_hello_ok(ok)), ok)
        self.assertEqual(ok.capability_names(), ["MULTI_STEP", "PROBES", "HASH", "SAVE_RESTORE"])

    def test_hello_bytes_are_the_spec_layout(self):
        # §3.1: u32 version, str trace_version, str auth; str = u32 n + UTF-8 bytes
        self.assertEqual(P.encode_hello(P.Hello(1, "trace-v3", "")),
                         b"\x01\x00\x00\x00" b"\x08\x00\x00\x00trace-v3" b"\x00\x00\x00\x00")
        self.assertEqual(P.encode_frame(P.BYE), b"\x0d\x00\x00\x00\x00\x00\x00\x00")

    def test_reset(self):
        img = P.Image(0x10000, [(0x10000, b"\x13\x00\x00\x00"), (0x20000, b"")],
                      {".lockstep.vreg": bytes(range(16)), ".x": b""})
        stream, back, names = P.decode_reset(P.encode_reset(5, img))
        self.assertEqual((stream, back, names), (5, img, [".lockstep.vreg", ".x"]))

    def test_image_memory_last_segment_wins(self):
        img = P.Image(0, [(10, b"\x01\x02\x03\x04"), (12, b"\x09")])
        self.assertEqual(img.memory(8, 8), b"\x00\x00\x01\x02\x09\x04\x00\x00")
        self.assertEqual(img.memory(10, 3, stride=2), b"\x01\x09\x00")

    def test_step_forced_free_tokens(self):
        self.assertEqual(P.decode_step(P.encode_step([(0, 7), (3, 20735)])), [(0, 7), (3, 20735)])
        entries = [(1, [1, 2, 3]), (0, [9])]
        self.assertEqual(P.decode_forced(P.encode_forced(entries)), entries)
        self.assertEqual(P.decode_free(P.encode_free([(2, 4096, 0)])), [(2, 4096, 0)])
        self.assertEqual(P.decode_tokens(P.encode_tokens([0, 1, 2 ** 32 - 1])), [0, 1, 2 ** 32 - 1])

    def test_probe_messages(self):
        m = P.ProbeMap([P.ProbeField("kind", 81, [(0, 1), (3, 2)]), P.ProbeField("x", 1, [])],
                       [P.ProbePoint(-1, 0, [0]), P.ProbePoint(4, 2, [0, 1])], [0])
        self.assertEqual(P.decode_probe_map(P.encode_probe_map(m)), m)
        self.assertEqual(P.decode_probe(P.encode_probe(1, -1, 0, "kind")), (1, -1, 0, "kind"))
        self.assertEqual(P.decode_values(P.encode_values([1.0, -2.5, 0.0])), [1.0, -2.5, 0.0])

    def test_hash_blob_error(self):
        self.assertEqual(P.decode_u64(P.encode_u64(2 ** 64 - 1), "HASH_OK"), 2 ** 64 - 1)
        self.assertEqual(P.decode_blob(P.encode_blob(b"abc")), b"abc")
        self.assertEqual(P.decode_restore(P.encode_restore(3, b"xy")), (3, b"xy"))
        self.assertEqual(P.decode_error(P.encode_error(7, "two\nlines")), (7, "two lines"))


class Malformed(unittest.TestCase):
    def assertMalformed(self, fn, payload, text):
        with self.assertRaises(P.Malformed) as cm:
            fn(payload)
        self.assertIn(text, str(cm.exception))
        self.assertNotIn("\n", str(cm.exception))

    def test_short_payload(self):
        full = P.encode_hello(P.Hello())
        for cut in range(len(full)):
            with self.assertRaises(P.Malformed):
                P.decode_hello(full[:cut])

    def test_leftover_bytes(self):
        self.assertMalformed(P.decode_hello, P.encode_hello(P.Hello()) + b"\x00", "left over")
        self.assertMalformed(lambda p: P.decode_empty(p, "BYE"), b"\x00", "left over")

    def test_counts_over_the_limits_are_refused_before_allocating(self):
        self.assertMalformed(P.decode_step, struct.pack("<I", 65537), "exceeds the limit")
        # a count within the limit but beyond the bytes present
        self.assertMalformed(P.decode_step, struct.pack("<I", 1000) + b"\x00" * 8, "needs at least")
        reset = struct.pack("<IQI", 0, 0, 4097)
        self.assertMalformed(P.decode_reset, reset, "segments count 4097 exceeds")
        bad_len = struct.pack("<IQI", 0, 0, 1) + struct.pack("<QI", 0, 2 ** 31)
        self.assertMalformed(P.decode_reset, bad_len, "segment data")
        self.assertMalformed(P.decode_hello, struct.pack("<II", 1, 65536), "exceeds the limit 65535")

    def test_total_steps_limit(self):
        free = struct.pack("<I", 2) + struct.pack("<III", 0, 4194304, 0) + struct.pack("<III", 1, 1, 0)
        self.assertMalformed(P.decode_free, free, "exceed the limit 4194304")
        forced = struct.pack("<I", 1) + struct.pack("<II", 0, 4194305)
        self.assertMalformed(P.decode_forced, forced, "exceed the limit")

    def test_bad_utf8(self):
        self.assertMalformed(P.decode_hello, struct.pack("<II", 1, 2) + b"\xff\xfe" + struct.pack("<I", 0), "UTF-8")

    def test_read_frame(self):
        stream = io.BytesIO(P.encode_frame(P.STEP, b"abcd") + P.encode_frame(P.BYE))
        self.assertEqual(P.read_frame(stream), (P.STEP, b"abcd"))
        self.assertEqual(P.read_frame(stream), (P.BYE, b""))
        self.assertIsNone(P.read_frame(stream))
        with self.assertRaises(P.Truncated):
            P.read_frame(io.BytesIO(P.encode_frame(P.STEP, b"abcd")[:10]))
        with self.assertRaises(P.Truncated):
            P.read_frame(io.BytesIO(b"\x01\x00"))
        with self.assertRaises(P.Malformed) as cm:
            P.read_frame(io.BytesIO(struct.pack("<II", 4, 64 * 1024 * 1024 + 1)))
        self.assertIn("exceeds the limit", str(cm.exception))

    def test_encode_refuses_oversized(self):
        with self.assertRaises(ValueError):
            P.encode_frame(P.STEP, bytes(64 * 1024 * 1024 + 1))
        with self.assertRaises(ValueError):
            P.Writer().str_("x" * 65536)

    def test_one_line(self):
        self.assertEqual(P.one_line("a\nb\r\tc"), "a b c")
        self.assertLessEqual(len(P.one_line("é" * 5000).encode()), 4096)


if __name__ == "__main__":
    unittest.main()
