"""Giving the heap back after connection floods: when the schedule trims (after a batch of closes, once they
pause, or at the latest a while after the batch), the trimmer on the event loop, and malloc_trim itself."""

from __future__ import annotations

import asyncio

from odradek.server.heap import HeapTrimmer, TrimSchedule, malloc_trim


def test_few_closes_never_trim() -> None:
    schedule = TrimSchedule(batch=3, quiet_s=1.0, max_wait_s=10.0)
    schedule.note_close(0.0)
    schedule.note_close(0.5)
    assert schedule.next_check(0.5) is None
    assert not schedule.due(100.0)


def test_a_flood_trims_once_it_pauses() -> None:
    schedule = TrimSchedule(batch=3, quiet_s=1.0, max_wait_s=10.0)
    for t in (0.0, 0.1, 0.2):
        schedule.note_close(t)
    assert schedule.next_check(0.2) == 1.0  # quiet for a second after the last close
    schedule.note_close(0.9)  # the flood goes on: the trim moves with it
    assert not schedule.due(1.5)
    assert schedule.due(1.9)
    schedule.trimmed()
    assert schedule.closed == 0 and schedule.next_check(2.0) is None


def test_a_flood_that_never_pauses_is_trimmed_after_max_wait() -> None:
    schedule = TrimSchedule(batch=2, quiet_s=1.0, max_wait_s=5.0)
    for t in (0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0):  # a close every half second or second
        schedule.note_close(t)
        assert not schedule.due(t)
    schedule.note_close(5.5)
    assert schedule.due(5.5)  # 5 s after the batch was reached (t=0.5), quiet or not
    assert schedule.next_check(5.5) == 0.0


def test_the_trimmer_trims_on_the_loop_after_the_flood() -> None:
    trims: list[int] = []

    async def main() -> None:
        trimmer = HeapTrimmer(TrimSchedule(batch=5, quiet_s=0.05, max_wait_s=1.0),
                              trim=lambda: bool(trims.append(1)) or True)
        for _ in range(10):
            trimmer.connection_closed()
        assert trims == []
        await asyncio.sleep(0.2)
        assert trims == [1] and trimmer.trims == 1
        for _ in range(4):  # fewer than a batch since: nothing more
            trimmer.connection_closed()
        await asyncio.sleep(0.2)
        assert trims == [1]
        trimmer.close()

    asyncio.run(main())


def test_the_trimmer_trims_once_request_memory_drained() -> None:
    trims: list[int] = []

    async def main() -> None:
        trimmer = HeapTrimmer(TrimSchedule(batch=100, quiet_s=0.05, max_wait_s=1.0),
                              trim=lambda: bool(trims.append(1)) or True)
        trimmer.memory_freed()
        await asyncio.sleep(0.2)
        assert trims == [1]
        trimmer.close()

    asyncio.run(main())


def test_malloc_trim_runs_or_says_it_cannot() -> None:
    assert malloc_trim() in (True, False)  # glibc: True; musl, macOS: a no-op
