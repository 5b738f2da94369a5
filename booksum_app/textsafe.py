"""Text from outside made safe to print on a terminal: no control characters, no escape sequences.

Book titles, chapter headings, file names, model names and server messages come from files
and servers we do not control. Printed raw, an ``ESC [2J`` clears the user's screen and an
OSC 52 sequence (``ESC ] 52 ; c ; <base64> BEL``) writes their clipboard. :func:`printable`
removes every escape sequence (CSI, OSC, DCS/SOS/PM/APC strings and two-byte ESC sequences,
in their 7-bit and 8-bit C1 forms) and every other C0/C1 control character and DEL; a tab
stays, a newline stays only where a field may span lines. :func:`markup_safe` also escapes
rich markup, since outside text is data, never markup.

This module imports nothing from booksum, so every layer can use it.
"""

from __future__ import annotations

import re

from rich.markup import escape

# String sequences: OSC (ESC ] / 0x9d), DCS (ESC P / 0x90), SOS (ESC X / 0x98), PM (ESC ^ / 0x9e),
# APC (ESC _ / 0x9f), up to their terminator (BEL or ST = ESC \ / 0x9c) or, unterminated, to the
# end of the text (a terminal would swallow what follows too).
_STRING_SEQ = r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f]).*?(?:\x07|\x1b\\|\x9c|$)"
# CSI (ESC [ / 0x9b): parameter and intermediate bytes, then one final byte.
_CSI_SEQ = r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
# Other ESC sequences: intermediate bytes and one final byte (ESC c resets the terminal, ESC 7 ...).
_ESC_SEQ = r"\x1b[\x20-\x2f]*[\x30-\x7e]?"
_SEQUENCES = re.compile(f"{_STRING_SEQ}|{_CSI_SEQ}|{_ESC_SEQ}", re.DOTALL)
_CONTROLS_KEEP_NEWLINE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROLS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")
_LINE_BREAKS = re.compile(r"\r\n|[\r\n\x0b\x0c\x85\u2028\u2029]")


def printable(text: object, *, newlines: bool = False) -> str:
    """``text`` (made a string) without escape sequences or control characters.

    Args:
        text: outside text (a title, a file name, a server's message, ...).
        newlines: keep line breaks (as ``\\n``); otherwise each becomes a space, so a one-line
            field stays on one line.
    """
    value = text if isinstance(text, str) else str(text)
    if value.isprintable():  # the common case: nothing to do
        return value
    value = _SEQUENCES.sub("", value)
    value = _LINE_BREAKS.sub("\n" if newlines else " ", value)
    return (_CONTROLS_KEEP_NEWLINE if newlines else _CONTROLS).sub("", value)


def markup_safe(text: object, *, newlines: bool = False) -> str:
    """:func:`printable` text with rich markup escaped: for f-strings printed with markup on."""
    return escape(printable(text, newlines=newlines))


__all__ = ["markup_safe", "printable"]
