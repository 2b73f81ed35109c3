"""ProgressLine: redrawn in place on a terminal, a plain line at most every interval otherwise."""

from __future__ import annotations

import io

from odradek.pipelines.progress import ProgressLine


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_terminal_redraws_one_line() -> None:
    out = Terminal()
    line = ProgressLine(out)
    line.update("a 1")
    line.update("a 2")
    line.done()
    assert out.getvalue() == "\r\x1b[2Ka 1\r\x1b[2Ka 2\n"


def test_terminal_line_is_cut_to_the_width() -> None:
    out = Terminal()
    line = ProgressLine(out, columns=lambda: 20)
    line.update("x" * 19)
    line.update("y" * 30)
    line.done()
    assert out.getvalue() == "\r\x1b[2K" + "x" * 19 + "\r\x1b[2K" + "y" * 18 + "…\n"


def test_pipe_gets_plain_lines_at_most_every_interval() -> None:
    out = io.StringIO()
    line = ProgressLine(out, plain_interval_s=3600)
    line.update("first")
    line.update("dropped")
    line.update("forced", force=True)
    line.done()
    assert out.getvalue() == "first\nforced\n"
