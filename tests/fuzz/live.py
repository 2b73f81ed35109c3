"""The live-broker fuzz run's parts: mutated frames from the recorded corpus, sent over several raw
sockets with one request in flight on each, the broker's memory sampled meanwhile, and canary records
produced with acks=all through a real client and read back at the end.

A frame is "answered" (a response frame came back), "closed" (the broker closed the socket: the frame was
refused) or "unanswered" (no response within `answer_timeout`: acks=0, a long poll, a join that waits for
others, a size prefix claiming more bytes than were sent); an unanswered socket is closed and replaced, so
no frame can stall the run. Everything random comes from one seed.
"""

from __future__ import annotations

import random
import selectors
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from odradek.protocol.framing import FrameDecoder
from tests.fuzz import fields, mutations

CLEAN_SHARE = 0.05  # frames sent as recorded: they move the broker's state (topics, groups) along
FIELD_SHARE = 0.45  # frames with values changed but well-formed (fields.py): they reach the handlers
SIZE_LIE_SHARE = 0.01  # frames whose size prefix does not match their length
MAX_RESPONSE = 64 << 20


@dataclass
class FrameSource:
    """Mutated corpus frames (header and body, no size prefix), and the size prefix to send with each."""

    frames: list[bytes]
    rng: random.Random

    def next(self) -> tuple[bytes, str]:
        """(bytes to send, a label for the stats: the recorded API key or 'lie')."""
        frame = self.rng.choice(self.frames)
        label = f"api{struct.unpack_from('>h', frame)[0]}"
        roll = self.rng.random()
        if roll < FIELD_SHARE:
            frame = fields.mutate_fields(self.rng, frame, self.rng.randint(1, 3))
        elif roll >= FIELD_SHARE + CLEAN_SHARE:
            frame = mutations.apply_all(frame, mutations.random_mutations(self.rng))
        size = len(frame)
        if self.rng.random() < SIZE_LIE_SHARE:
            size = max(0, size + self.rng.choice((-1, 1)) * self.rng.randint(1, 64))
            label = "lie"
        return struct.pack(">i", size) + frame, label


@dataclass
class Stats:
    sent: int = 0
    answered: int = 0
    closed: int = 0
    unanswered: int = 0
    connects: int = 0
    by_label: Counter[str] = field(default_factory=Counter)

    def __str__(self) -> str:
        return (f"{self.sent} frames: {self.answered} answered, {self.closed} refused (connection closed), "
                f"{self.unanswered} unanswered; {self.connects} connections")


class _Slot:
    """One socket with at most one frame in flight."""

    def __init__(self) -> None:
        self.sock: socket.socket | None = None
        self.decoder = FrameDecoder(MAX_RESPONSE)
        self.deadline: float | None = None  # set while a frame is in flight


class RawFuzzer:
    """Sends frames from `source` to 127.0.0.1:`port` over `width` sockets, one frame in flight on each."""

    def __init__(self, port: int, source: FrameSource, width: int = 8, answer_timeout: float = 0.25,
                 trace: Path | None = None) -> None:
        self.port = port
        self.trace = open(trace, "w") if trace is not None else None  # noqa: SIM115  # closed by run()
        self.source = source
        self.answer_timeout = answer_timeout
        self.slots = [_Slot() for _ in range(width)]
        self.selector = selectors.DefaultSelector()
        self.stats = Stats()

    def run(self, count: int, every: int = 0, between: Callable[[int], None] | None = None) -> Stats:
        """Send `count` frames; after every `every` frames sent, call `between(frames sent so far)`."""
        try:
            while self.stats.sent < count or self._in_flight():
                for slot in self.slots:
                    if slot.deadline is None and self.stats.sent < count:
                        self._send(slot)
                        if between is not None and every and self.stats.sent % every == 0:
                            between(self.stats.sent)
                            self._rearm()  # the pause was ours, not the broker's
                self._wait()
        finally:
            for slot in self.slots:
                self._drop(slot)
            self.selector.close()
            if self.trace is not None:
                self.trace.close()
        return self.stats

    def _in_flight(self) -> bool:
        return any(s.deadline is not None for s in self.slots)

    def _rearm(self) -> None:
        deadline = time.monotonic() + self.answer_timeout
        for slot in self.slots:
            if slot.deadline is not None:
                slot.deadline = deadline

    def _send(self, slot: _Slot) -> None:
        data, label = self.source.next()
        self.stats.sent += 1
        self.stats.by_label[label] += 1
        if slot.sock is None:
            slot.sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
            slot.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            slot.decoder = FrameDecoder(MAX_RESPONSE)
            self.selector.register(slot.sock, selectors.EVENT_READ, slot)
            self.stats.connects += 1
        if self.trace is not None:  # the broker's log names connections by the client's port
            self.trace.write(f"{slot.sock.getsockname()[1]} {data.hex()}\n")
        try:
            slot.sock.sendall(data)
        except OSError:  # closed by the broker after an earlier frame's response
            self.stats.closed += 1
            self._drop(slot)
            return
        slot.deadline = time.monotonic() + self.answer_timeout

    def _wait(self) -> None:
        deadlines = [s.deadline for s in self.slots if s.deadline is not None]
        if not deadlines:
            return
        timeout = max(0.0, min(deadlines) - time.monotonic())
        for key, _ in self.selector.select(timeout):
            self._read(key.data)
        now = time.monotonic()
        for slot in self.slots:
            if slot.deadline is not None and slot.deadline <= now:
                self.stats.unanswered += 1
                self._drop(slot)

    def _read(self, slot: _Slot) -> None:
        assert slot.sock is not None
        try:
            data = slot.sock.recv(1 << 16)
        except OSError:
            data = b""
        if not data:
            if slot.deadline is not None:
                self.stats.closed += 1
            self._drop(slot)
            return
        if slot.decoder.feed(data) and slot.deadline is not None:
            self.stats.answered += 1
            slot.deadline = None

    def _drop(self, slot: _Slot) -> None:
        if slot.sock is not None:
            self.selector.unregister(slot.sock)
            slot.sock.close()
            slot.sock = None
        slot.deadline = None


class RssSampler:
    """The largest resident set size of process `pid`, sampled every `interval` seconds in a thread."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        self.process = psutil.Process(pid)
        self.interval = interval
        self.peak = self.process.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="rss-sampler", daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.peak = max(self.peak, self.process.memory_info().rss)
            except psutil.Error:
                return  # the broker is gone; the test notices


class Canary:
    """Records produced with acks=all to `topic`; the acknowledged ones, by (partition, offset), and the
    deliveries that failed."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        from confluent_kafka import Producer

        self.topic = topic
        self.partitions = partitions
        self.acked: dict[tuple[int, int], bytes] = {}
        self.failed: list[str] = []
        self._seq = 0
        self._producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                                   "message.timeout.ms": 30000})

    def produce(self, records_per_partition: int = 2, timeout: float = 60.0) -> None:
        """Produce a few records to each partition and wait for every delivery report."""

        def report(err: object, msg: object) -> None:
            if err is not None:
                self.failed.append(str(err))
            else:
                self.acked[(msg.partition(), msg.offset())] = msg.value()  # type: ignore[attr-defined]

        for _ in range(records_per_partition):
            for p in range(self.partitions):
                self._seq += 1
                self._producer.produce(self.topic, value=b"canary-%d" % self._seq, partition=p, on_delivery=report)
        left = self._producer.flush(timeout)
        if left:
            self.failed.append(f"{left} records not delivered within {timeout:g}s")

    def read_back(self, bootstrap: str, timeout: float = 60.0) -> dict[tuple[int, int], bytes]:
        """The records at the acknowledged offsets, read from each partition's start."""
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        last = {p: max((o for (q, o) in self.acked if q == p), default=-1) for p in range(self.partitions)}
        got: dict[tuple[int, int], bytes] = {}
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "canary-check",
                             "enable.auto.commit": False, "enable.partition.eof": True})
        try:
            consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in range(self.partitions)])
            done = {p for p, o in last.items() if o < 0}
            deadline = time.monotonic() + timeout
            while len(done) < self.partitions and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is None:
                    continue
                if msg.error() is not None:
                    continue  # partition EOF: the rest may still come (the high watermark moves)
                p, o = msg.partition(), msg.offset()
                if (p, o) in self.acked:
                    got[(p, o)] = msg.value()
                if o >= last[p]:
                    done.add(p)
        finally:
            consumer.close()
        return got

    def close(self) -> None:
        self._producer.flush(10)


def scan_log(path: Path, needles: tuple[str, ...], context: int = 20) -> Iterator[str]:
    """Lines of the file at `path` that contain any of `needles`, each with the `context` lines after it."""
    with open(path, errors="replace") as f:
        lines = iter(f)
        for line in lines:
            if any(n in line for n in needles):
                tail = [line]
                for extra in lines:
                    tail.append(extra)
                    if len(tail) > context:
                        break
                yield "".join(tail)
