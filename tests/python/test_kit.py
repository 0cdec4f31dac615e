"""The kit's serve() loop driven through lockstep_dut.client with the toy chip (toy_chip.py):
handshake, capabilities, streams, multi-step messages against single steps, every error code
of dut-protocol.md §3.10, stdout protection, bad frames, and the socket transports."""

import os
import struct
import subprocess
import tempfile
import time
import unittest

import helpers
from lockstep_dut import Image, protocol as P
from lockstep_dut.client import ChipError, Client, ProtocolError

IMAGE = Image(0x10000, [(0x10000, b"\x13\x00\x00\x00" * 4)], {".toy": b"\x05"})


def spawn(*options):
    return Client.spawn(helpers.toy_command(*options), timeout=30, stderr=subprocess.PIPE)


class Session(unittest.TestCase):
    def setUp(self):
        self.c = spawn()
        self.info = self.c.hello()

    def tearDown(self):
        self.c.close()
        self.c.proc.stderr.close()

    def ready(self, n=2):
        self.c.streams(n)
        for s in range(n):
            self.c.reset(s, IMAGE)

    def assertCode(self, code, fn, *args):
        with self.assertRaises(ChipError) as cm:
            fn(*args)
        self.assertEqual(cm.exception.code, code, cm.exception.message)
        self.assertNotIn("\n", cm.exception.message)
        return cm.exception.message

    def test_hello_announces_what_the_chip_defines(self):
        self.assertEqual((self.info.protocol_version, self.info.trace_version), (1, "trace-v3"))
        self.assertEqual((self.info.vocab_size, self.info.max_streams), (20736, 8))
        self.assertEqual(self.info.capabilities, 0b1111)
        self.assertEqual(self.info.name, "toy 1")

    def test_second_hello_is_unexpected(self):
        self.assertCode(1, self.c.hello)

    def test_steps_multi_steps_and_batch_independence(self):
        self.ready(3)
        inputs = [0, 5, 9, 100, 20735, 3]
        single = [self.c.step([(0, t)])[0] for t in inputs]
        self.c.reset(1, IMAGE)
        self.assertEqual(self.c.forced([(1, inputs)]), [single])
        self.c.reset(1, IMAGE)
        # ragged batch, streams in another order, stream 2 alongside
        got = self.c.forced([(2, [1, 2]), (1, inputs)])
        self.assertEqual(got[1], single)
        self.c.reset(0, IMAGE)
        free = self.c.free([(0, 5, 0)])[0]
        self.c.reset(0, IMAGE)
        chain, t = [], 0
        for _ in range(5):
            t = self.c.step([(0, t)])[0]
            chain.append(t)
        self.assertEqual(free, chain)

    def test_hash_save_restore(self):
        self.ready(2)
        self.c.forced([(0, [1, 2, 3])])
        h = self.c.hash(0)
        blob = self.c.save(0)
        after = self.c.forced([(0, [4, 5])])[0]
        self.c.restore(1, blob)  # into another stream
        self.assertEqual(self.c.hash(1), h)
        self.assertEqual(self.c.forced([(1, [4, 5])])[0], after)
        self.assertCode(4, self.c.restore, 0, b"foreign")

    def test_probes(self):
        self.ready(1)
        m = self.c.probe_map()
        self.assertEqual([f.name for f in m.fields], ["acc", "input"])
        self.c.step([(0, 7)])
        self.assertIn("recording was off", self.assertCode(2, self.c.probe, 0, -1, 0, "input"))
        self.c.probe_record(True)
        self.c.step([(0, 7)])
        self.assertEqual(self.c.probe(0, -1, 0, "input"), [7.0])
        self.assertCode(2, self.c.probe, 0, 3, 1, "input")   # no such point
        self.assertCode(2, self.c.probe, 0, -1, 0, "nope")   # no such field

    def test_bad_arguments(self):
        self.assertCode(2, self.c.streams, 0)
        self.assertCode(2, self.c.streams, 9)
        self.c.streams(2)
        self.assertIn("has not been reset", self.assertCode(2, self.c.step, [(0, 1)]))
        self.c.reset(0, IMAGE)
        self.assertIn("does not exist", self.assertCode(2, self.c.step, [(5, 1)]))
        self.assertIn("vocab_size", self.assertCode(2, self.c.step, [(0, 20736)]))
        self.c.reset(1, IMAGE)
        self.assertIn("repeated", self.assertCode(2, self.c.step, [(0, 1), (0, 2)]))
        self.assertCode(2, self.c.forced, [(0, [])])
        self.assertCode(2, self.c.free, [(0, 0, 1)])
        # the session goes on after errors
        self.assertEqual(len(self.c.step([(0, 1), (1, 2)])), 2)

    def test_malformed_frames_keep_the_session(self):
        self.c.send_frame(0x77, b"junk")
        rtype, payload = self.c.read_frame()
        self.assertEqual((rtype, P.decode_error(payload)[0]), (P.ERROR, 1))
        self.c.send_frame(P.STEP, b"\x01\x00")  # short payload
        self.assertEqual(P.decode_error(self.c.read_frame()[1])[0], 1)
        self.c.send_frame(P.RESPONSE | P.STEP, b"")  # a response type is not a request
        self.assertEqual(P.decode_error(self.c.read_frame()[1])[0], 1)
        self.c.streams(1)
        self.c.send_frame(P.STEP, struct.pack("<I", 9) + b"\x00" * 72)  # more entries than max_streams
        self.assertEqual(P.decode_error(self.c.read_frame()[1])[0], 1)
        self.c.bye()

    def test_oversized_length_ends_the_session(self):
        self.c.send_raw(struct.pack("<II", P.STEP, 64 * 1024 * 1024 + 1))
        rtype, payload = self.c.read_frame()
        self.assertEqual(P.decode_error(payload)[0], 1)
        with self.assertRaises(ProtocolError):
            self.c.read_frame()  # the chip closed its side
        # a session the harness broke: exit status 2, as `lockstep chip-server --stdio`
        self.assertEqual(self.c.close(), 2)


class Handshake(unittest.TestCase):
    def run_one(self, options, fn):
        c = spawn(*options)
        try:
            return fn(c)
        finally:
            c.close()
            c.proc.stderr.close()

    def test_request_before_hello(self):
        def fn(c):
            with self.assertRaises(ChipError) as cm:
                c.streams(1)
            return cm.exception.code
        self.assertEqual(self.run_one([], fn), 1)

    def test_other_versions(self):
        for kw in ({"protocol_version": 2}, {"trace_version": "trace-v2"}):
            def fn(c):
                with self.assertRaises(ChipError) as cm:
                    c.hello(**kw)
                return cm.exception.code
            self.assertEqual(self.run_one([], fn), 6, kw)

    def test_bare_chip_announces_only_multi_step_and_refuses_the_rest(self):
        def fn(c):
            info = c.hello()
            c.streams(1)
            c.reset(0, IMAGE)
            codes = []
            for call in (lambda: c.hash(0), lambda: c.save(0), lambda: c.probe_map()):
                with self.assertRaises(ChipError) as cm:
                    call()
                codes.append(cm.exception.code)
            # MULTI_STEP is emulated by the kit from step()
            a = c.forced([(0, [1, 2, 3])])[0]
            c.reset(0, IMAGE)
            b = [c.step([(0, t)])[0] for t in (1, 2, 3)]
            return info.capabilities, codes, a == b
        self.assertEqual(self.run_one(["--bare"], fn), (P.MULTI_STEP, [3, 3, 3], True))

    def test_missing_section_and_internal_error(self):
        def fn(c):
            c.hello()
            c.streams(1)
            with self.assertRaises(ChipError) as cm:
                c.reset(0, Image(0x10000, [], {}))
            first = cm.exception.code
            c.reset(0, IMAGE)
            c.step([(0, 1)])
            with self.assertRaises(ChipError) as cm:
                c.step([(0, 1)])
            return first, cm.exception.code, cm.exception.message
        first, code, message = self.run_one(["--need-section", ".toy", "--fail-at", "2"], fn)
        self.assertEqual((first, code), (4, 7))
        self.assertEqual(message, "RuntimeError: planted failure")

    def test_prints_do_not_reach_the_frame_stream(self):
        c = spawn("--noisy")
        try:
            c.hello()
            c.streams(1)
            c.reset(0, IMAGE)
            self.assertEqual(len(c.forced([(0, [1, 2, 3])])[0]), 3)
            c.bye()
        finally:
            c.close()
            err = c.proc.stderr.read().decode()
            c.proc.stderr.close()
        self.assertIn("noise on stdout 1", err)

    def test_end_of_file_ends_the_chip(self):
        c = spawn()
        c.hello()
        t0 = time.monotonic()
        self.assertEqual(c.close(wait=5), 0)
        c.proc.stderr.close()
        self.assertLess(time.monotonic() - t0, 5)


class Listeners(unittest.TestCase):
    def serve(self, *options):
        proc = subprocess.Popen(helpers.toy_command(*options), stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        line = proc.stderr.readline().decode()
        self.assertIn("listening on", line)
        return proc, line.split("listening on ", 1)[1].strip()

    def finish(self, proc):
        self.assertEqual(proc.wait(10), 0)
        proc.stderr.close()

    def test_unix_socket_serves_sessions_one_after_another(self):
        with tempfile.TemporaryDirectory() as d:
            proc, address = self.serve("--listen", "unix:" + os.path.join(d, "chip.sock"), "--sessions", "2")
            results = []
            for _ in range(2):
                c = Client.connect(address, timeout=30)
                c.hello()
                c.streams(1)
                c.reset(0, IMAGE)
                results.append(c.free([(0, 4, 0)]))
                c.bye()
                c.close()
            self.assertEqual(results[0], results[1])
            self.finish(proc)

    def test_tcp_with_a_token(self):
        with tempfile.TemporaryDirectory() as d:
            token = os.path.join(d, "token")
            with open(token, "w") as f:
                f.write("s3cret\n")
            # --sessions 1: the refused login does not use up the one session (N wrong logins
            # never end the server).
            proc, address = self.serve("--listen", "tcp:127.0.0.1:0", "--token-file", token, "--sessions", "1")
            self.assertTrue(address.startswith("tcp:127.0.0.1:"))
            c = Client.connect(address, timeout=30)
            with self.assertRaises(ChipError) as cm:
                c.hello(auth="wrong")
            self.assertEqual(cm.exception.code, 5)
            with self.assertRaises(ProtocolError):
                c.read_frame()  # closed after the failed authentication
            c.close()
            time.sleep(0.3)
            self.assertIsNone(proc.poll(), "a refused login was counted as a session")
            c = Client.connect(address, timeout=30)
            self.assertEqual(c.hello(auth="s3cret").max_streams, 8)
            c.bye()
            c.close()
            self.finish(proc)

    def test_a_connection_without_hello_is_not_a_session(self):
        # As lockstep chip-server --sessions N: a port probe or a health check (connects and
        # closes, or sends a request that is not HELLO) does not use up a session.
        for listen in ("tcp:127.0.0.1:0", "unix"):
            with self.subTest(listen=listen), tempfile.TemporaryDirectory() as d:
                if listen == "unix":
                    listen = "unix:" + os.path.join(d, "chip.sock")
                proc, address = self.serve("--listen", listen, "--sessions", "1")
                try:
                    probe = Client.connect(address, timeout=30)  # a port probe: nothing sent
                    probe.close()
                    probe = Client.connect(address, timeout=30)  # a health check: no HELLO
                    probe.send_frame(P.STREAMS, struct.pack("<I", 1))
                    self.assertEqual(probe.read_frame()[0], P.ERROR)  # STREAMS before HELLO
                    probe.close()
                    time.sleep(0.3)
                    self.assertIsNone(proc.poll(), "a connection without HELLO was counted")
                    c = Client.connect(address, timeout=30)  # the harness it waits for
                    c.hello()
                    c.streams(1)
                    c.reset(0, IMAGE)
                    self.assertEqual(len(c.free([(0, 4, 0)])[0]), 4)
                    c.bye()
                    c.close()
                    self.assertEqual(proc.wait(10), 0)
                    err = proc.stderr.read().decode()
                    self.assertEqual(err.count("without HELLO"), 2, err)
                    self.assertIn("not counted as a session", err)
                    self.assertNotIn("Traceback", err)
                finally:
                    if proc.poll() is None:
                        proc.kill()
                        proc.wait()
                    proc.stderr.close()

    def test_a_refused_hello_is_not_a_session(self):
        # A HELLO that is refused (a wrong secret) served nothing: it is logged and not counted,
        # so wrong logins never end a --sessions N server (as lockstep chip-server).
        with tempfile.TemporaryDirectory() as d:
            token = os.path.join(d, "token")
            with open(token, "w") as f:
                f.write("s3cret\n")
            proc, address = self.serve("--listen", "unix:" + os.path.join(d, "s"), "--token-file", token,
                                       "--sessions", "1")
            for _ in range(2):
                c = Client.connect(address, timeout=30)
                with self.assertRaises(ChipError):
                    c.hello(auth="wrong")
                c.close()
            c = Client.connect(address, timeout=30)  # the right secret, another protocol version
            with self.assertRaises(ChipError):
                c.hello(auth="s3cret", protocol_version=99)
            c.close()
            time.sleep(0.3)
            self.assertIsNone(proc.poll(), "a refused HELLO was counted as a session")
            c = Client.connect(address, timeout=30)
            c.hello(auth="s3cret")
            c.bye()
            c.close()
            self.assertEqual(proc.wait(10), 0)
            err = proc.stderr.read().decode()
            proc.stderr.close()
            # The log says why each was refused, as lockstep chip-server's does (it said "end of
            # stream" for the version: how the session ended after the refusal).
            self.assertEqual(err.count("a session was refused at HELLO (authentication failed); not counted"), 2, err)
            self.assertIn("a session was refused at HELLO (protocol version 99 is not supported (this chip speaks 1))", err)

    def test_sessions_zero_is_refused_by_the_api(self):
        from lockstep_dut import SetupError, serve
        for bad in (0, -1, True, 1.5):
            with self.subTest(sessions=bad), self.assertRaises(SetupError) as cm:
                serve(object(), listen="tcp:127.0.0.1:0", sessions=bad)
            self.assertIn("from 1 up", str(cm.exception))

    def test_remote_address_needs_allow_remote_and_a_token(self):
        r = subprocess.run(helpers.toy_command("--listen", "tcp:0.0.0.0:0"), capture_output=True, timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("not loopback", r.stderr.decode())


if __name__ == "__main__":
    unittest.main()


class KitInputs(unittest.TestCase):
    """What a chip object and its answers may be, checked by the kit with errors that name the
    value and its type (found by an outside tester: np.int64(5) read "token 5, not an id below
    20736", a str error code broke the session, a str vocab_size was converted silently)."""

    class Chip:
        vocab_size, max_streams, name, identity = 20736, 2, "kit", "kit-1"
        out = [0]

        def reset(self, stream, image):
            pass

        def step(self, inputs):
            return self.out

    class Index:  # an integer that is not an int, as numpy's and one-element tensors are
        def __init__(self, v):
            self.v = v

        def __index__(self):
            return self.v

    def session(self, **attrs):
        from lockstep_dut.server import Session
        chip = self.Chip()
        for k, v in attrs.items():
            setattr(chip, k, v)
        return Session(chip), chip

    def answer(self, out):
        s, chip = self.session()
        chip.out = out
        s.greeted = True
        s._streams(P.encode_u32(1))
        s.was_reset.add(0)
        return s.respond(P.STEP, P.encode_step([(0, 1)]))

    def test_integer_tokens_of_any_type_are_ids(self):
        self.assertEqual(self.answer([self.Index(5)]), (P.RESPONSE | P.STEP, P.encode_tokens([5])))

    class BoolIndex(Index):  # numpy's bool_ and a bool tensor: __index__, and a dtype of bools
        dtype = "bool"

    def test_other_tokens_are_named_by_type(self):
        for out, what in (([1.0], "1.0 (a float)"), ([True], "True (a bool)"), (["3"], "'3' (a str)"),
                          ([self.BoolIndex(1)], "of bools")):
            rtype, payload = self.answer(out)
            self.assertEqual(rtype, P.ERROR)
            code, message = P.decode_error(payload)
            self.assertEqual(code, P.E_INTERNAL)
            self.assertIn("step's token 0 is ", message)
            self.assertIn(what, message)
        code, message = P.decode_error(self.answer([self.Index(20736)])[1])
        self.assertEqual(message, "step returned token 20736, not an id below 20736")

    def test_a_chip_object_is_checked_whole(self):
        from lockstep_dut import SetupError
        for attrs, words in ((dict(vocab_size="20736"), "vocab_size is '20736' (a str)"),
                             (dict(vocab_size=20736.7), "vocab_size is 20736.7 (a float)"),
                             (dict(max_streams=None), "max_streams is None"),
                             (dict(name=None), "name is None (a NoneType), not a str"),
                             (dict(step=None), "has no method step()"),
                             (dict(vocab_size=2 ** 32), "vocab_size 1 .. 2^32-1"),
                             (dict(max_streams=self.BoolIndex(1)), "of bools"),
                             (dict(identity="x" * 65536), "identity is 65536 bytes in UTF-8")):
            with self.assertRaises(SetupError) as cm:
                self.session(**attrs)
            self.assertIn(words, str(cm.exception))
        self.assertEqual(self.session(vocab_size=self.Index(7))[0].vocab_size, 7)

    def test_error_codes_are_the_protocols(self):
        from lockstep_dut import DutError
        with self.assertRaises(TypeError):
            DutError("boom", "7")
        with self.assertRaises(TypeError):
            DutError("boom", 8)
        self.assertEqual(DutError("boom", 4).code, 4)
        self.assertEqual(DutError("boom", self.Index(2)).code, 2)  # a numpy integer, as tokens

        class Odd(DutError):
            code = "x"
        s, chip = self.session()

        def step(inputs):
            raise Odd("odd")
        chip.step = step
        s.greeted = True
        s._streams(P.encode_u32(1))
        s.was_reset.add(0)
        rtype, payload = s.respond(P.STEP, P.encode_step([(0, 1)]))
        self.assertEqual((rtype, P.decode_error(payload)), (P.ERROR, (P.E_INTERNAL, "Odd (code 'x'): odd")))

    def test_load_elf_and_image_memory_refuse_what_they_cannot_use(self):
        from lockstep_dut.elf import load_elf
        with self.assertRaises(TypeError):
            load_elf(3)  # not read as file descriptor 3
        with self.assertRaisesRegex(ValueError, "^/nonexistent.elf: cannot read: No such file"):
            load_elf("/nonexistent.elf")
        with self.assertRaisesRegex(ValueError, "not a regular file"):
            load_elf(tempfile.gettempdir())
        with self.assertRaises(ValueError):
            IMAGE.memory(-5, 4)
        with self.assertRaises(TypeError):
            IMAGE.memory("0x10000", 4)
        self.assertEqual(IMAGE.memory(0x10000, 2), b"\x13\x00")
        with self.assertRaisesRegex(ValueError, "width -1"):
            P.ProbeField("f", -1, [])
