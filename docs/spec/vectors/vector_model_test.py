#!/usr/bin/python3
"""vector_model.py at the extremes of vector.md §4's stated bounds, with values worked by hand.

Random programs (check_ref.py) seldom reach a bound exactly; these cases do, one per bound that
decides whether 64-bit (or, for VRED SUMSQ, 128-bit) arithmetic is exact: each input attains the
bound (e.g. 1,024 words of -2^31 give a sum of squares of exactly 2^72), and the expected values
are computed by hand in the comments.  Also: §2.1 loading of a section that ends inside a word.

    /usr/bin/python3 docs/spec/vectors/vector_model_test.py
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vector_model as vm  # noqa: E402

MIN, MAX = -(1 << 31), (1 << 31) - 1


def enc(f3, f7, rd=0):
    """The word `.insn r CUSTOM_1, f3, f7, rd, a1, a2` (rs1 = x11, rs2 = x12; §4.0)."""
    return (f7 << 25) | (12 << 20) | (11 << 15) | (f3 << 12) | (rd << 7) | 0x2B


def ops(A, B):
    return (B << 16) | A


class Bounds(unittest.TestCase):
    def test_vred_sumsq_sum_of_squares_is_2_pow_72(self):
        # 1,024 words of -2^31: acc = 2^10 * 2^62 = 2^72 (vred.md §1: <= 2^72).  SH = 0:
        # rnd(2^72, 16) = 2^56 saturates to 2^31 - 1; SH = 31: rnd(2^72, 47) = 2^25.
        for sh, want in ((0, MAX), (31, 1 << 25)):
            st = vm.State()
            st.vr[:] = MIN
            out = vm.execute(st, enc(6, sh << 2), ops(0, 0), ops(0, 1024))
            self.assertIsNone(out.trap)
            self.assertEqual(st.vr[0], want)

    def test_vmatr_k_score_is_2_pow_51(self):
        # ACT block 0 and KC rows 0..1 all -128, ASH[0] = KSH = 25: s = 8 * 128 * 128 = 2^17,
        # e = 50, s * 2^34 = 2^51 saturates to 2^31 - 1.  KSH[1] = 0: e = 25, s * 2^9 = 2^26.
        st = vm.State()
        st.act[:64] = -128
        st.kc[:64] = -128
        st.ash[0], st.ksh[0], st.ksh[1] = 25, 25, 0
        out = vm.execute(st, enc(1, 0), ops(0, 0), ops(0, 2))
        self.assertIsNone(out.trap)
        for h in range(8):
            self.assertEqual(st.vr[64 * h], MAX)
            self.assertEqual(st.vr[64 * h + 1], 1 << 26)

    def test_vmatr_v_sum_is_minus_2_pow_54(self):
        # T = 64 probabilities of 65536 (words 64..575 hold the 8 groups), VC all -128, VSH 25:
        # o = 64 * 2^16 * -2^7 * 2^25 = -2^54; rnd(-2^54, 16) = -2^38 saturates to -2^31.
        st = vm.State()
        st.vr[64:64 + 512] = 65536
        st.vc[:] = -128
        st.vsh[:] = 25
        out = vm.execute(st, enc(1, 1), ops(0, 64), ops(0, 64))  # dst 0, src 64, r0 0, T 64
        self.assertIsNone(out.trap)
        self.assertTrue((st.vr[:64] == MIN).all())

    def test_vew_add_is_minus_2_pow_32(self):
        # -2^31 + -2^31 = -2^32 (vew.md §1: magnitude <= 2^32) saturates to -2^31.
        st = vm.State()
        st.vr[0], st.vr[1] = MIN, MIN
        vm.execute(st, enc(4, 0), ops(2, 0), ops(1, 1))  # dst 2, a 0, b 1, n 1
        self.assertEqual(st.vr[2], MIN)

    def test_vew_mul_is_2_pow_62(self):
        # -2^31 * -2^31 = 2^62 (vew.md §1: <= 2^62); rnd(2^62, 16) = 2^46 saturates to 2^31 - 1.
        st = vm.State()
        st.vr[0], st.vr[1] = MIN, MIN
        vm.execute(st, enc(4, 1), ops(2, 0), ops(1, 1))
        self.assertEqual(st.vr[2], MAX)

    def test_vmat_six_terms_below_2_pow_60(self):
        # K = 6 chunks against blocks 0..5, ACT all -128, W all -8: acc = 64 * 1024 = 2^16 per
        # chunk; WSCALE 65535, ASH 25: 6 terms of 2^16 * 65535 * 2^25 (< 2^60 in all); y =
        # rnd(6 * 65535 * 2^41, 16) = 6 * 65535 * 2^25 saturates to 2^31 - 1.  With WSCALE 1 and
        # ASH 0: y = rnd(6 * 2^16, 16) = 6.
        for ws, ash, want in ((65535, 25, MAX), (1, 0, 6)):
            st = vm.State()
            st.act[:] = -128
            st.wmem[:6 * 64] = -8
            st.wscale[:6] = ws
            st.ash[:] = ash
            out = vm.execute(st, enc(0, 6), ops(10, 0), ops(0, 1))  # dst 10, b0 0, c0 0, R 1
            self.assertIsNone(out.trap)
            self.assertEqual(st.vr[10], want)

    def test_vld_is_2_pow_38(self):
        # M = -2^31 and the byte -128: 2^38 (vld.md §1) saturates to 2^31 - 1; the byte 1 gives -2^31.
        record = bytes([0x00, 0x00, 0x00, 0x80, 0x80, 0x01])
        st = vm.State()
        vm.execute(st, enc(7, 0), 0x20000, ops(0, 2), ram=lambda a, n: record[:n])
        self.assertEqual(st.vr[0], MAX)
        self.assertEqual(st.vr[1], MIN)

    def test_vexp_difference_is_2_pow_32_minus_1(self):
        # Scores 2^31 - 1 and -2^31: m - s = 2^32 - 1, index min(1023, rnd(2^32 - 1, 10)) = 1023,
        # EXP[1023] = 0; S = EXP[0] = 65536.
        st = vm.State()
        st.vr[0], st.vr[1] = MAX, MIN
        vm.execute(st, enc(3, 0), ops(100, 0), ops(200, 2))  # dst 100, src 0, sums 200, T 2
        self.assertEqual((st.vr[100], st.vr[101], st.vr[200]), (65536, 0, 65536))

    def test_vq_amax_2_pow_31(self):
        # One word -2^31: amax = 2^31, e = 25 (rnd(2^31, 24) = 128, rnd(2^31, 25) = 64), q = -64.
        st = vm.State()
        st.vr[0] = MIN
        vm.execute(st, enc(2, 0), ops(5, 0), ops(0, 1))  # ACT block 5, src 0, n 1
        self.assertEqual((st.act[320], st.ash[5]), (-64, 25))


class Loading(unittest.TestCase):
    def test_section_ending_inside_a_word(self):
        # §2.1: 6 bytes of .lockstep.vreg: word 0 = 0x80000001 (-2^31 + 1), word 1 gets its low
        # bytes 0xff, 0x7f and zeros above: 0x7fff.  3 bytes of .lockstep.wscale: WSCALE[1] = 0x12.
        st = vm.State.from_sections({".lockstep.vreg": bytes([1, 0, 0, 0x80, 0xFF, 0x7F]),
                                     ".lockstep.wscale": bytes([0x34, 0x12, 0x12])})
        self.assertEqual((st.vr[0], st.vr[1], st.vr[2]), (MIN + 1, 0x7FFF, 0))
        self.assertEqual((st.wscale[0], st.wscale[1]), (0x1234, 0x12))

    def test_wmem_nibbles(self):
        # Byte 0x8f: W[0][0] = 0xf = -1 (bits 3..0), W[0][1] = 0x8 = -8 (bits 7..4).
        st = vm.State.from_sections({".lockstep.wmem": bytes([0x8F, 0x07])})
        self.assertEqual(st.wmem[:4].tolist(), [-1, -8, 7, 0])

    def test_rejects(self):
        for sections in ({".lockstep.ash": bytes([26])}, {".lockstep.act": bytes(385)},
                         {".lockstep.vregs": b""}):
            with self.assertRaises(vm.LoadError):
                vm.State.from_sections(sections)


if __name__ == "__main__":
    unittest.main()
