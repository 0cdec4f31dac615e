// Command lines that the tools print for a user to paste into a POSIX shell (repeat, replay and
// resume commands), and text from outside made safe to print in a line of output.
#pragma once

#include <string>
#include <string_view>

namespace lockstep::format {

/// `s` as one word of a POSIX shell command line (POSIX.1-2017 XCU §2.2): unchanged when it is
/// non-empty and made only of letters, digits and `_@%+=:,./-`; otherwise in single quotes, each
/// `'` in it written `'\''`.  shell_word("a b") is `'a b'`, shell_word("it's") is `'it'\''s'`.
std::string shell_word(std::string_view s);

/// `s` in single quotes always (as shell_word quotes it): for a whole command given as one word,
/// such as `--dut 'python3 chip.py'`, so that it reads as one.
std::string shell_quoted(std::string_view s);

/// `s` with each control character (below 0x20, and DEL) written as `\n`, `\r`, `\t` or `\xNN`,
/// other bytes unchanged (UTF-8 included): text from outside, such as a chip's name, printed in a
/// line of output, stays on that line and sends no terminal escape sequence.
std::string escape_controls(std::string_view s);

}  // namespace lockstep::format
