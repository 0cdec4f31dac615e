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

/// shell_word of a path given as an argument: a relative path that starts with `-` gets `./` in
/// front, so that the command parses it as a path, not an option (`lockstep replay ./-dash`;
/// found by an outside tester: `lockstep replay -dash` said "case is required").
std::string shell_path(std::string_view path);

/// `s` in single quotes always (as shell_word quotes it): for a whole command given as one word,
/// such as `--dut 'python3 chip.py'`, so that it reads as one.
std::string shell_quoted(std::string_view s);

/// `s` with each control character (below 0x20, and DEL) written as `\n`, `\r`, `\t` or `\xNN`,
/// each C1 or bidirectional control (U+0080..U+009F, U+200E/F, U+202A..U+202E, U+2066..U+2069)
/// as `\uXXXX`, and each byte that is not part of valid UTF-8 as `\xNN`; other text unchanged:
/// text from outside, such as a chip's name, printed in a line of output, stays on that line,
/// reads in order and sends no terminal escape sequence.
std::string escape_controls(std::string_view s);

}  // namespace lockstep::format
