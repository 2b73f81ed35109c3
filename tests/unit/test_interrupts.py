"""odradek.interrupts: Ctrl-C and SIGTERM set the stop event and say "stopping" once; a forked child that
has not yet exec'd ignores them (its parent handles Ctrl-C)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from odradek.interrupts import StopRequest


@pytest.fixture
def restored_handlers() -> Iterator[None]:
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    for s, h in saved.items():
        signal.signal(s, h)


def test_the_first_signal_stops_and_says_so_once(restored_handlers: None, capfd: pytest.CaptureFixture[str]) -> None:
    stop = StopRequest("stopping the job")
    assert not stop.is_set()
    os.kill(os.getpid(), signal.SIGINT)  # no KeyboardInterrupt: the handler is ours
    assert stop.wait(5) and stop.signalled
    os.kill(os.getpid(), signal.SIGTERM)
    stop.wait(5)
    err = capfd.readouterr().err
    assert err.count("stopping the job ...") == 1
    assert "still stopping the job; please wait ..." in err


def test_a_stop_the_command_asks_for_itself_is_not_a_signal(restored_handlers: None) -> None:
    stop = StopRequest()
    stop.set()
    assert stop.is_set() and not stop.signalled


def test_a_forked_child_leaves_ctrl_c_to_its_parent(restored_handlers: None) -> None:
    stop = StopRequest()
    pid = os.fork()
    if pid == 0:  # the child, as between fork and exec: the inherited handler must do nothing
        stop._handle(signal.SIGINT, None)
        os._exit(3 if stop.is_set() else 0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert not stop.is_set()
