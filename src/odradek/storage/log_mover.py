"""Moving a partition's replica to another of the broker's log dirs while it keeps serving (KIP-113,
AlterReplicaLogDirs): Kafka's ReplicaAlterLogDirsThread.

A move has a *future* replica, a log in the target dir named `<topic>-<partition>.<uuid>-future`, started
at the current log's start offset. One mover thread copies batches from the current log into it as a
follower would (`append_as_follower`, so offsets, leader epochs, producer state and aborted transactions
come along), repeats on it what happens to the current log meanwhile (truncations, a moved log start) and,
once it has caught up, asks for the swap on the thread that appends (the broker's event loop, through
`run_swap`): there, holding the current log's locks, the last few batches are copied, the current
directory is renamed `<topic>-<partition>.<uuid>-delete` (the commit point), and the future log becomes the
partition's log in memory. Then, back on the mover thread, the new log is flushed, the rename is made
durable, the future directory takes its final name and the old one is removed.

A restart before the commit finds both directories and resumes the move; after it, the current one is a
`-delete` directory (swept at load) and the future one, which holds everything, is promoted
(`LogManager`). Nothing is copied while the thread that appends waits, except the short tail at the swap.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from odradek.fsutil import fsync_dir
from odradek.protocol.errors import KafkaError
from odradek.storage.dir_names import delete_dir_name
from odradek.storage.log import Log

if TYPE_CHECKING:
    from odradek.storage.manager import LogManager

log = logging.getLogger("odradek.storage")

TopicPartition = tuple[str, int]
CHUNK_BYTES = 1024 * 1024  # per copy step (Kafka's replica.fetch.max.bytes default)
SWAP_READS = 8  # at most this many chunks copied during the swap; more and the mover goes on instead
SWAP_LOCK_WAIT_S = 0.05  # how long the swap waits for a copy step to release the move's lock
SWAP_WAIT_S = 1.0  # how long a requested swap may take to run before the mover steps on and asks again
IDLE_POLL_S = 0.05  # how often an idle mover looks again at the moves whose current logs are growing


@dataclass(eq=False)
class Move:
    """One replica's move: its future log and what the current log did since the mover last looked."""

    key: TopicPartition
    future: Log
    lock: threading.Lock = field(default_factory=threading.Lock)  # held by a copy step and by the swap
    cancelled: bool = False
    swap_requested_at: float | None = None  # monotonic time of the swap asked for and not yet run
    truncated_to: int | None = None  # the lowest end offset the current log was truncated to
    truncated_fully: bool = False

    def note_truncation(self, end_offset: int, full: bool) -> None:
        """The current log's truncation listener (called under its lock)."""
        self.truncated_fully = self.truncated_fully or full
        self.truncated_to = end_offset if self.truncated_to is None else min(self.truncated_to, end_offset)


class LogDirMover:
    """The moves of one broker and the thread that carries them out."""

    def __init__(self, manager: LogManager) -> None:
        self._manager = manager
        self._moves: dict[TopicPartition, Move] = {}
        self._finishing: list[tuple[Log, Log, Path]] = []
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopping = False
        # runs the swap on the thread that appends to logs; inline (on the mover thread) without a broker
        self.run_swap: Callable[[Callable[[], None]], None] = lambda fn: fn()

    # --- the registry ------------------------------------------------------------------------

    def add(self, key: TopicPartition, future: Log, current: Log) -> None:
        move = Move(key, future)
        with current.lock:
            current.truncation_listener = move.note_truncation
        with self._cond:
            self._moves[key] = move
            self._cond.notify_all()

    def cancel(self, key: TopicPartition) -> Move | None:
        """Stop the move (waiting for a copy step under way); the caller deletes its future log."""
        with self._cond:
            move = self._moves.pop(key, None)
        if move is None:
            return None
        with move.lock:
            move.cancelled = True
        current = self._manager.get_log(*key)
        if current is not None:
            with current.lock:
                if current.truncation_listener == move.note_truncation:
                    current.truncation_listener = None
        return move

    def start(self, run_swap: Callable[[Callable[[], None]], None] | None = None) -> None:
        """Start the thread (once); `run_swap` runs a function on the thread that appends to logs."""
        if run_swap is not None:
            self.run_swap = run_swap
        with self._cond:
            if self._thread is None and not self._stopping:
                self._thread = threading.Thread(target=self._run, name="odradek-log-dir-mover", daemon=True)
                self._thread.start()

    def stop(self) -> None:
        """Stop the thread after the swaps already done are finished; moves under way stay on disk and
        resume at the next start-up."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join()
        self._finish_all()

    # --- the thread --------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            self._finish_all()
            with self._cond:
                if self._stopping:
                    return
                moves = list(self._moves.values())
                if not moves and not self._finishing:
                    self._cond.wait()
                    continue
            busy = False
            for move in moves:
                ready = False
                asked = move.swap_requested_at
                if asked is not None and time.monotonic() - asked < SWAP_WAIT_S:
                    # not stepped while its swap waits to run on the appending thread: a copy step holds the
                    # move's lock, and a swap that finds it held gives up, so a mover stepping on under steady
                    # writes would starve its own swap for good
                    continue
                with move.lock:
                    if move.cancelled:
                        continue
                    try:
                        progressed, ready = self._step(move)
                    except (OSError, KafkaError) as exc:
                        log.warning("Moving %s-%d to %s: %s (retrying)", move.key[0], move.key[1],
                                    move.future.dir.parent, exc)
                        progressed = False
                    busy = busy or progressed
                if ready and (move.swap_requested_at is None
                              or time.monotonic() - move.swap_requested_at >= SWAP_WAIT_S):
                    move.swap_requested_at = time.monotonic()
                    try:
                        self.run_swap(lambda m=move: self._swap(m))  # type: ignore[misc]
                    except RuntimeError:  # the event loop is closing: the move resumes at the next start
                        move.swap_requested_at = None
            if not busy:
                with self._cond:
                    if not self._stopping and not self._finishing:
                        self._cond.wait(IDLE_POLL_S)

    def _step(self, move: Move) -> tuple[bool, bool]:
        """One copy step (holding move.lock): (whether it copied anything, whether the future log has
        caught up with the current one)."""
        current = self._manager.get_log(*move.key)
        if current is None or current.closed:
            return False, False
        future = move.future
        with current.lock:
            truncated_to, fully = move.truncated_to, move.truncated_fully
            move.truncated_to, move.truncated_fully = None, False
            start, end, hw = current.log_start_offset, current.log_end_offset, current.high_watermark
        self._follow(future, truncated_to, fully, start, hw)
        copied = False
        if future.log_end_offset < end:
            try:
                data = current.read(future.log_end_offset, CHUNK_BYTES, max_offset=end).records
            except KafkaError:  # truncated or retention moved its start meanwhile: seen next step
                return True, False
            if data:
                future.append_as_follower(data, keep_start=True)
                copied = True
        future.high_watermark = hw
        return copied, future.log_end_offset >= end

    @staticmethod
    def _follow(future: Log, truncated_to: int | None, fully: bool, start: int, hw: int) -> None:
        """Repeat on the future log what the current one did: a truncation, a new log start offset."""
        if fully:
            future.truncate_fully_and_start_at(start)
        elif truncated_to is not None and truncated_to < future.log_end_offset:
            future.truncate_to(max(truncated_to, future.log_start_offset))
        if start > future.log_end_offset:
            future.truncate_fully_and_start_at(start)
        elif start > future.log_start_offset:
            future.high_watermark = hw
            future.delete_records_before(start)

    # --- the swap (on the thread that appends) -------------------------------------------------

    def _swap(self, move: Move) -> None:
        """Make the future log the partition's log, if it can be done at once: never waits for a lock a
        worker thread may hold for long (a cleaner's swap); the mover steps on and asks again later."""
        try:
            self._try_swap(move)
        finally:
            move.swap_requested_at = None
            with self._cond:
                self._cond.notify_all()

    def _try_swap(self, move: Move) -> None:
        # a copy step holding the move's lock ends within milliseconds (it holds no lock the loop thread
        # holds; waiting here releases the GIL it needs): wait that long rather than give up, or a loop that
        # runs the swap late under load finds a step under way every time and the move never ends
        if self._stopping or not move.lock.acquire(timeout=SWAP_LOCK_WAIT_S):
            return
        try:
            if move.cancelled:
                return
            current = self._manager.get_log(*move.key)
            if current is None or current.closed or not current.swap_lock.acquire(blocking=False):
                return
            try:
                with current.lock:
                    doomed = self._swap_locked(move, current)
                if doomed is None:
                    return
            finally:
                current.swap_lock.release()
        finally:
            move.lock.release()
        self._manager.replaced(move.key, current, move.future)
        with self._cond:
            self._moves.pop(move.key, None)
            self._finishing.append((current, move.future, doomed))
            self._cond.notify_all()

    def _swap_locked(self, move: Move, current: Log) -> Path | None:
        future = move.future
        if move.truncated_to is not None or move.truncated_fully:
            return None  # the mover repeats the truncation first (an fsync: not on this thread)
        if future.log_start_offset != current.log_start_offset:
            return None
        for _ in range(SWAP_READS):
            if future.log_end_offset >= current.log_end_offset:
                break
            data = current.read(future.log_end_offset, CHUNK_BYTES).records
            if not data:
                return None
            future.append_as_follower(data, keep_start=True)
        if future.log_end_offset != current.log_end_offset:
            return None
        with future.lock:
            future.high_watermark = current.high_watermark
            future.epochs.replace(current.epochs.entries)
            # the current log's producer state also knows producers whose batches retention removed
            future.producer_state = current.producer_state
            if current.cleaner_checkpoint is not None:
                future.cleaner_checkpoint = current.cleaner_checkpoint
        doomed = current.dir.with_name(delete_dir_name(current.topic, current.partition))
        try:
            os.rename(current.dir, doomed)  # the commit: from here the future log is the replica
        except OSError as exc:
            log.error("Cannot rename %s to %s to complete its move: %s", current.dir, doomed.name, exc)
            return None
        current.retire(future)
        return doomed

    # --- after the swap (on the mover thread) ---------------------------------------------------

    def _finish_all(self) -> None:
        while True:
            with self._cond:
                if not self._finishing:
                    return
                old, new, doomed = self._finishing.pop(0)
            try:
                self._finish(old, new, doomed)
            except OSError:
                log.exception("Completing the move of %s-%d failed; the next start-up completes it",
                              new.topic, new.partition)

    @staticmethod
    def _finish(old: Log, new: Log, doomed: Path) -> None:
        old.close_files()
        new.flush()
        fsync_dir(doomed.parent)  # the old replica's -delete rename is durable, after the new one's data
        final = new.dir.parent / f"{new.topic}-{new.partition}"
        if new.dir != final and not new.closed:
            new.rename_dir(final)
            fsync_dir(final.parent)
        shutil.rmtree(doomed, ignore_errors=True)
        log.info("The replica of %s-%d moved from %s to %s", new.topic, new.partition, doomed.parent,
                 new.dir.parent)
