"""Log compaction on real files: latest value per key, offsets kept (gaps), tombstones and their delete
horizon, min/max compaction lag, dirty ratio, the active segment, null keys, crash-safe swaps, recovery of
compacted logs, the cleaner checkpoint, concurrency with appends."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.protocol.records import (
    DELETE_HORIZON_MASK,
    BatchHeader,
    Record,
    build_batch,
    decode_records,
    iter_batches,
    read_header,
)
from odradek.storage import log_validator
from odradek.storage.cleaner import CleanerConfig, CleaningAborted, compact, run_cleanup
from odradek.storage.log import Log, LogConfig
from odradek.storage.log_validator import AppendOrigin
from odradek.storage.manager import CLEANER_OFFSET_CHECKPOINT, LogManager, read_checkpoint
from odradek.storage.segment import DELETED_SUFFIX, LogSegment
from tests.storage_helpers import T0, Clock
from tests.unit.background import repeatedly_in_background

COMPACT = {
    "cleanup.policy": "compact",
    "segment.bytes": "600",
    "index.interval.bytes": "100",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "1000",
}

KV = tuple[bytes | None, bytes | None]


def open_log(path: Path, props: dict[str, str] | None = None, clock: Clock | None = None, **kw: object) -> Log:
    config = LogConfig.from_props(COMPACT if props is None else props)
    return Log(path, config, time_ms=clock or Clock(), **kw)  # type: ignore[arg-type]


def append(log: Log, items: Sequence[KV], ts: int = T0, **batch_kw: object) -> list[int]:
    """Each (key, value) as a batch of its own; returns their offsets. The high watermark follows."""
    offsets = [log.append_as_leader(build_batch([kv], timestamp=ts, **batch_kw), 3).first_offset for kv in items]
    log.high_watermark = log.log_end_offset
    return offsets


def updates(keys: int, rounds: int) -> list[KV]:
    return [(f"key-{k}".encode(), f"value-{r}-{k}".encode() * 3) for r in range(rounds) for k in range(keys)]


def batches_of(log: Log) -> list[tuple[BatchHeader, list[Record]]]:
    """Every batch from the log start, fetched as a consumer does: the next fetch starts after the batch
    (the log may end with offsets compaction emptied: no data there)."""
    out: list[tuple[BatchHeader, list[Record]]] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20).records
        if not data:
            # only the last segments can end in offsets compaction emptied
            assert len(log.segments) == 1 or offset >= log.segments[-2].base_offset
            break
        for pos, h in iter_batches(data):
            out.append((h, decode_records(memoryview(data)[pos : pos + h.size])))
            offset = h.next_offset
    return out


def records_of(log: Log) -> list[Record]:
    return [r for _, records in batches_of(log) for r in records]


def segment_bytes(log: Log) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(log.dir.glob("*.log"))}


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def updated(tmp_path: Path, clock: Clock) -> tuple[Log, dict[int, KV]]:
    """A compacted log of 6 keys updated 10 times, one record per batch, over many small segments."""
    log = open_log(tmp_path / "t-0", clock=clock)
    items = updates(6, 10)
    offsets = append(log, items)
    return log, dict(zip(offsets, items, strict=True))


# --- what survives ------------------------------------------------------------------------------


def test_latest_value_per_key_survives_across_segments(updated: tuple[Log, dict[int, KV]], clock: Clock) -> None:
    log, written = updated
    active = log.active_segment.base_offset
    before = len(log.segments)
    active_bytes = log.active_segment.log_path.read_bytes()
    stats = compact(log, clock.now)
    assert stats is not None and stats.end_offset == active
    survivors = records_of(log)
    offsets = [r.offset for r in survivors]
    assert offsets == sorted(set(offsets))  # increasing
    for r in survivors:
        assert written[r.offset] == (r.key, r.value)  # unchanged offset, key and value
    latest = {}
    for offset, (key, _) in sorted(written.items()):
        latest[key] = offset
    cleaned = [r for r in survivors if r.offset < active]
    assert len({r.key for r in cleaned}) == len(cleaned)  # one record per key below the active segment
    for r in cleaned:
        later = [o for o, (k, _) in written.items() if k == r.key and r.offset < o < active]
        assert not later
    assert {r.key: r.offset for r in survivors} == latest
    assert [r.offset for r in survivors if r.offset >= active] == [o for o in written if o >= active]
    assert log.active_segment.log_path.read_bytes() == active_bytes
    assert len(log.segments) < before
    assert log.cleaner_checkpoint == active
    assert not list(log.dir.glob("*.cleaned")) and not list(log.dir.glob("*.swap"))


def test_batches_keep_offsets_producer_fields_epoch_and_codec(tmp_path: Path, clock: Clock) -> None:
    log = open_log(tmp_path / "t-0", {**COMPACT, "segment.bytes": "100000"}, clock)
    records = [(b"a", b"1"), (b"b", b"1"), (b"a", b"2"), (b"c", b"1"), (b"b", b"2")]
    data = build_batch(records, timestamp=T0, compression=4, producer_id=7, producer_epoch=2, base_sequence=0)
    log.append_as_leader(data, 5)
    data = build_batch([(b"d", b"1")], timestamp=T0, producer_id=7, producer_epoch=2, base_sequence=5)
    log.append_as_leader(data, 5)
    log.roll()
    log.high_watermark = log.log_end_offset
    assert compact(log, clock.now) is not None
    (h, kept), (h2, _) = batches_of(log)
    assert (h.base_offset, h.last_offset_delta, h.records_count) == (0, 4, 3)
    assert [(r.offset, r.key, r.value) for r in kept] == [(2, b"a", b"2"), (3, b"c", b"1"), (4, b"b", b"2")]
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (7, 2, 0)
    assert (h.partition_leader_epoch, h.compression, h.max_timestamp) == (5, 4, T0)
    assert all(r.timestamp == T0 for r in kept)
    assert (h2.base_offset, h2.records_count) == (5, 1)  # untouched: copied as is
    # the producer's state is unchanged: its next batch follows on
    data = build_batch([(b"e", b"1")], timestamp=T0, producer_id=7, producer_epoch=2, base_sequence=6)
    assert log.append_as_leader(data, 5).first_offset == 6


def test_emptied_batches_are_dropped_and_reads_skip_to_the_next(updated: tuple[Log, dict[int, KV]], clock: Clock) -> None:
    log, written = updated
    compact(log, clock.now)
    survivors = [r.offset for r in records_of(log)]
    gone = [o for o in written if o not in survivors]
    assert gone
    for offset in gone:
        first = read_header(log.read(offset, 1 << 20).records)
        nxt = min(o for o in survivors if o > offset)
        assert first.base_offset <= nxt <= first.last_offset  # the batch holding the next survivor
        assert first.base_offset > offset or first.records_count < first.last_offset_delta + 1


def test_null_key_records_are_dropped_by_the_cleaner(tmp_path: Path, clock: Clock) -> None:
    plain = {k: v for k, v in COMPACT.items() if k != "cleanup.policy"}
    log = open_log(tmp_path / "t-0", plain, clock)
    append(log, [(None, b"x"), (b"k", b"1"), (None, b"y")] * 10)
    log.roll()
    log.close()
    log = open_log(tmp_path / "t-0", clock=clock)  # the topic became compacted
    log.high_watermark = log.log_end_offset
    compact(log, clock.now)
    assert [(r.key, r.value) for r in records_of(log)] == [(b"k", b"1")]


# --- tombstones ---------------------------------------------------------------------------------


def test_tombstones_survive_one_cleaning_then_go_after_delete_retention(tmp_path: Path, clock: Clock) -> None:
    log = open_log(tmp_path / "t-0", clock=clock)
    append(log, [(b"gone", b"v1"), (b"kept", b"v1"), (b"gone", None)] + updates(3, 3))
    log.roll()
    log.high_watermark = log.log_end_offset
    assert compact(log, clock.now) is not None
    got = [(r.key, r.value) for r in records_of(log)]
    assert (b"gone", None) in got and (b"gone", b"v1") not in got and (b"kept", b"v1") in got
    stamped = [h for h, records in batches_of(log) if any(r.value is None for r in records)]
    assert [h.attributes & DELETE_HORIZON_MASK for h in stamped] == [DELETE_HORIZON_MASK]
    assert stamped[0].delete_horizon_ms == T0 + 1000 == log.latest_delete_horizon
    assert [r.timestamp for _, rs in batches_of(log) for r in rs if r.key == b"gone"] == [T0]  # unchanged
    clock.now = T0 + 999
    assert compact(log, clock.now) is None  # nothing dirty, horizon not reached
    clock.now = T0 + 1000
    stats = compact(log, clock.now)
    assert stats is not None and "horizon" in stats.reason
    got = [(r.key, r.value) for r in records_of(log)]
    assert all(k != b"gone" for k, _ in got) and (b"kept", b"v1") in got
    assert log.latest_delete_horizon == -1
    assert compact(log, clock.now) is None


# --- what gets cleaned, and when ----------------------------------------------------------------


def test_min_compaction_lag_protects_recent_segments(tmp_path: Path, clock: Clock) -> None:
    log = open_log(tmp_path / "t-0", {**COMPACT, "min.compaction.lag.ms": "60000"}, clock)
    append(log, updates(3, 6), ts=T0 - 120_000)
    old_end = log.log_end_offset
    log.roll()
    append(log, updates(3, 6), ts=T0 - 1000)
    log.roll()
    recent = {name: data for name, data in segment_bytes(log).items() if int(name[:20]) >= old_end}
    stats = compact(log, clock.now)
    assert stats is not None and stats.end_offset == old_end == log.cleaner_checkpoint
    after = segment_bytes(log)
    assert {name: after[name] for name in recent} == recent
    survivors = records_of(log)
    assert len([r for r in survivors if r.offset < old_end]) == 3
    assert len([r for r in survivors if r.offset >= old_end]) == 18


def test_dirty_ratio_below_threshold_skips(tmp_path: Path, clock: Clock) -> None:
    log = open_log(tmp_path / "t-0", {**COMPACT, "min.cleanable.dirty.ratio": "0.5"}, clock)
    append(log, updates(40, 1))
    log.roll()
    log.high_watermark = log.log_end_offset
    assert compact(log, clock.now) is not None  # all dirty: ratio 1
    append(log, updates(2, 1))
    log.roll()
    log.high_watermark = log.log_end_offset
    before = segment_bytes(log)
    assert compact(log, clock.now) is None  # a small dirty tail: ratio < 0.5
    assert segment_bytes(log) == before


def test_max_compaction_lag_forces_cleaning(tmp_path: Path, clock: Clock) -> None:
    props = {**COMPACT, "min.cleanable.dirty.ratio": "0.99", "max.compaction.lag.ms": "5000"}
    log = open_log(tmp_path / "t-0", props, clock)
    append(log, updates(40, 1), ts=T0 - 100_000)
    log.roll()
    log.high_watermark = log.log_end_offset
    compact(log, clock.now)
    append(log, updates(2, 2), ts=T0 - 1000)
    log.roll()
    log.high_watermark = log.log_end_offset
    assert compact(log, clock.now) is None  # young enough
    clock.now = T0 + 5000
    stats = compact(log, clock.now)
    assert stats is not None and "max.compaction.lag.ms" in stats.reason
    assert len(records_of(log)) == 40


def test_max_compaction_lag_rolls_the_active_segment(tmp_path: Path, clock: Clock) -> None:
    props = {**COMPACT, "segment.bytes": "100000", "max.compaction.lag.ms": "5000"}
    log = open_log(tmp_path / "t-0", props, clock)
    append(log, [(b"a", b"1")], ts=T0)
    append(log, [(b"a", b"2")], ts=T0 + 6000)
    assert len(log.segments) == 2


def test_active_segment_and_data_above_the_high_watermark_are_untouched(tmp_path: Path, clock: Clock) -> None:
    log = open_log(tmp_path / "t-0", clock=clock)
    append(log, updates(3, 12))
    bases = [s.base_offset for s in log.segments]
    log.high_watermark = bases[3] + 1  # inside the fourth segment: only three are below it
    untouched = {name: data for name, data in segment_bytes(log).items() if int(name[:20]) >= bases[3]}
    stats = compact(log, clock.now)
    assert stats is not None and stats.end_offset == bases[3]
    after = segment_bytes(log)
    assert {name: after[name] for name in untouched} == untouched


def test_compact_delete_also_applies_retention(tmp_path: Path, clock: Clock) -> None:
    props = {**COMPACT, "cleanup.policy": "compact,delete", "retention.ms": "10000"}
    log = open_log(tmp_path / "t-0", props, clock)
    append(log, updates(3, 6), ts=T0 - 60_000)
    old_end = log.log_end_offset
    log.roll()
    append(log, updates(3, 6), ts=T0)
    log.roll()
    log.high_watermark = log.log_end_offset
    assert run_cleanup(log, clock.now) > 0
    assert log.log_start_offset == old_end
    assert compact(log, clock.now) is not None
    assert len(records_of(log)) == 3


def test_offset_map_capacity_cleans_in_rounds(tmp_path: Path, clock: Clock) -> None:
    log = open_log(tmp_path / "t-0", clock=clock)
    append(log, updates(30, 2))
    log.roll()
    log.high_watermark = log.log_end_offset
    small = CleanerConfig(dedupe_buffer_size=24 * 10, io_buffer_load_factor=1.0)  # ten keys
    stats = compact(log, clock.now, small)
    assert stats is not None and stats.end_offset == 10
    while compact(log, clock.now, small) is not None:
        pass
    assert log.cleaner_checkpoint == log.active_segment.base_offset
    assert len(records_of(log)) == 30


# --- null keys on produce -----------------------------------------------------------------------


def test_null_key_rejected_only_for_compacted_topics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    compacted = open_log(tmp_path / "c-0")
    with pytest.raises(KafkaError) as err:
        compacted.append_as_leader(build_batch([(b"k", b"v"), (None, b"v")]), 0)
    assert err.value.code == ErrorCode.INVALID_RECORD
    assert "Compacted topic cannot accept message without key in topic partition c-0." in str(err.value)
    assert compacted.log_end_offset == 0
    compacted.append_as_leader(build_batch([(b"k", None)]), 0)  # a tombstone has a key
    plain = open_log(tmp_path / "p-0", {})

    def no_decoding(*args: object) -> None:
        raise AssertionError("records decoded for a topic that is not compacted")

    monkeypatch.setattr(log_validator, "decode_records", no_decoding)
    assert plain.append_as_leader(build_batch([(None, b"v")]), 0).first_offset == 0


# --- reopening, recovery, crashes mid-swap ------------------------------------------------------


def test_reopen_after_compaction_clean_and_unclean(updated: tuple[Log, dict[int, KV]], clock: Clock) -> None:
    log, _ = updated
    compact(log, clock.now)
    expected = [(r.offset, r.key, r.value) for r in records_of(log)]
    end = log.log_end_offset
    log.close()
    for clean in (True, False):
        reopened = open_log(log.dir, clock=clock, clean_shutdown=clean, cleaner_checkpoint=3)
        assert reopened.log_end_offset == end
        assert [(r.offset, r.key, r.value) for r in records_of(reopened)] == expected
        assert reopened.append_as_leader(build_batch([(b"new", b"1")]), 3).first_offset == end
        reopened.truncate_to(end)
        reopened.close()
    # a log once compacted keeps its gaps legal after its policy changes
    plain = open_log(log.dir, {"segment.bytes": "600"}, clock, clean_shutdown=False, cleaner_checkpoint=3)
    assert [(r.offset, r.key, r.value) for r in records_of(plain)] == expected


def test_recovery_of_a_compacted_log_still_catches_a_damaged_base_offset(
    updated: tuple[Log, dict[int, KV]], clock: Clock
) -> None:
    log, _ = updated
    compact(log, clock.now)
    first = log.segments[0]
    headers = list(first.iter_headers())
    assert len(headers) >= 3
    pos, victim = headers[1]
    log.close()
    with open(first.log_path, "r+b") as f:  # the low byte of the base offset, outside the CRC
        f.seek(pos + 7)
        f.write(bytes([(victim.base_offset + 40) & 0xFF]))
    reopened = open_log(log.dir, clock=clock, clean_shutdown=False)
    assert reopened.log_end_offset == victim.base_offset
    assert [s.base_offset for s in reopened.segments] == [first.base_offset]


class Crash(Exception):
    pass


def crash_on_nth_rename_after_commit(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    """After the swap's commit (the rename to .swap), the swap renames each old segment to .deleted and
    then the cleaned one to its final name: crash at the nth of those renames."""
    real = LogSegment.change_suffix
    calls = {"n": 0}

    def change_suffix(self: LogSegment, suffix: str) -> None:
        if suffix in (DELETED_SUFFIX, ""):
            calls["n"] += 1
            if calls["n"] == n:
                raise Crash
        real(self, suffix)

    monkeypatch.setattr(LogSegment, "change_suffix", change_suffix)


@pytest.mark.parametrize("crash_at", [1, 2, 3])
def test_crash_during_swap_is_completed_at_load(
    updated: tuple[Log, dict[int, KV]], clock: Clock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, crash_at: int
) -> None:
    log, _ = updated
    expected_log = open_log(tmp_path / "copy" / "t-0", clock=clock)
    for name in segment_bytes(log):
        shutil.copy(log.dir / name, expected_log.dir / name)
    expected_log.close()
    expected_log = open_log(expected_log.dir, clock=clock)
    expected_log.high_watermark = expected_log.log_end_offset
    compact(expected_log, clock.now)
    expected = [(r.offset, r.key, r.value) for r in records_of(expected_log)]

    crash_on_nth_rename_after_commit(monkeypatch, crash_at)
    with pytest.raises(Crash):
        compact(log, clock.now)
    monkeypatch.undo()
    log.wait_for_background()  # the unlinking of .deleted files (load would sweep them as well)
    assert list(log.dir.glob("*.log.swap"))
    crashed = tmp_path / "crashed" / "t-0"
    shutil.copytree(log.dir, crashed)
    reopened = open_log(crashed, clock=clock, clean_shutdown=False)
    assert not list(crashed.glob("*.swap")) and not list(crashed.glob("*.cleaned"))
    assert [(r.offset, r.key, r.value) for r in records_of(reopened)] == expected
    assert [s.base_offset for s in reopened.segments] == [s.base_offset for s in expected_log.segments]


def test_crash_before_the_swap_leaves_the_old_segments(updated: tuple[Log, dict[int, KV]], clock: Clock) -> None:
    log, _ = updated
    expected = [(r.offset, r.key, r.value) for r in records_of(log)]
    log.close()
    for stray in ("00000000000000000000.log.cleaned", "00000000000000000000.index.cleaned",
                  "00000000000000000000.index.swap", "00000000000000000007.timeindex.swap"):
        (log.dir / stray).write_bytes(b"\x00" * 100)
    reopened = open_log(log.dir, clock=clock, clean_shutdown=False)
    assert [(r.offset, r.key, r.value) for r in records_of(reopened)] == expected
    assert sorted(p.name for p in log.dir.iterdir() if p.suffix in (".cleaned", ".swap")) == []


def test_crash_after_the_log_rename_rebuilds_the_index(updated: tuple[Log, dict[int, KV]], clock: Clock) -> None:
    log, _ = updated
    compact(log, clock.now)
    expected = [(r.offset, r.key, r.value) for r in records_of(log)]
    first = log.segments[0]
    log.close()
    first.index_path.rename(first.index_path.with_name(first.index_path.name + ".swap"))
    reopened = open_log(log.dir, clock=clock)
    assert [(r.offset, r.key, r.value) for r in records_of(reopened)] == expected
    assert reopened.segments[0].index_entries


def test_a_group_never_ends_with_an_emptied_segment(tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = {**{k: v for k, v in COMPACT.items() if k != "cleanup.policy"}, "segment.bytes": "100000"}
    log = open_log(tmp_path / "t-0", plain, clock)
    append(log, [(b"a", b"1")])
    log.roll()
    append(log, [(b"b", b"1")])
    log.roll()
    emptied = log.log_end_offset
    append(log, [(None, b"no key")] * 3)
    log.roll()
    append(log, [(b"c", b"1")])
    log.close()
    log = open_log(log.dir, {**COMPACT, "segment.bytes": "100000"}, clock)
    log.high_watermark = log.log_end_offset
    stats = compact(log, clock.now)
    assert stats is not None and (stats.segments_before, stats.segments_after) == (3, 2)
    assert [s.base_offset for s in log.segments] == [0, emptied, emptied + 3]
    assert log.segments[1].size == 0
    assert [(r.key, r.value) for r in records_of(log)] == [(b"a", b"1"), (b"b", b"1"), (b"c", b"1")]
    log.close()
    reopened = open_log(log.dir, clock=clock, clean_shutdown=False)
    assert [(r.key, r.value) for r in records_of(reopened)] == [(b"a", b"1"), (b"b", b"1"), (b"c", b"1")]
    append(reopened, [(b"d", b"1")])
    reopened.roll()
    reopened.high_watermark = reopened.log_end_offset
    compact(reopened, clock.now)  # the emptied segment is merged away now
    assert [s.base_offset for s in reopened.segments] == [0, reopened.log_end_offset]


# --- concurrency, followers, the manager --------------------------------------------------------


def test_swap_abandoned_when_the_segments_changed(updated: tuple[Log, dict[int, KV]], clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    log, _ = updated
    real = Log.replace_segments

    def meanwhile(self: Log, *args: object) -> bool:
        self.delete_records_before(self.segments[1].base_offset)  # retention got there first
        return real(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(Log, "replace_segments", meanwhile)
    with pytest.raises(CleaningAborted):
        compact(log, clock.now)
    assert not list(log.dir.glob("*.cleaned")) and not list(log.dir.glob("*.swap"))
    assert log.cleaner_checkpoint is None
    assert records_of(log)


def test_appends_while_cleaning(tmp_path: Path, clock: Clock) -> None:
    log = open_log(tmp_path / "t-0", clock=clock)
    with repeatedly_in_background(lambda: compact(log, clock.now)):
        for item in updates(8, 60):
            append(log, [item])
    log.roll()
    log.high_watermark = log.log_end_offset
    compact(log, clock.now)
    assert sorted((r.key, r.value) for r in records_of(log)) == sorted(dict(updates(8, 60)).items())


def test_follower_of_a_compacted_topic_keeps_gaps_in_one_segment(tmp_path: Path, clock: Clock) -> None:
    log = open_log(tmp_path / "t-0", clock=clock)
    data = build_batch([(b"a", b"1")], base_offset=0) + build_batch([(b"b", b"1")], base_offset=5)
    data += build_batch([(b"c", b"1")], base_offset=9)
    log.append_as_follower(data)
    assert [s.base_offset for s in log.segments] == [0]
    assert read_header(log.read(2, 1000).records).base_offset == 5
    log.close()
    reopened = open_log(log.dir, clock=clock, clean_shutdown=False)
    assert reopened.log_end_offset == 10
    assert [r.offset for r in records_of(reopened)] == [0, 5, 9]


def test_manager_runs_the_cleaner_and_keeps_its_checkpoint(tmp_path: Path, clock: Clock) -> None:
    manager = LogManager([tmp_path / "d"], {"segment.bytes": "600"}, time_ms=clock)
    manager.startup()
    log = manager.get_or_create_log("t", 0, {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.1"})
    plain = manager.get_or_create_log("p", 0)
    append(log, updates(4, 10))
    append(plain, updates(4, 10))
    plain_before = segment_bytes(plain)
    assert manager.run_cleaner() == 1
    checkpoint = read_checkpoint(tmp_path / "d" / CLEANER_OFFSET_CHECKPOINT)
    assert checkpoint == {("t", 0): log.active_segment.base_offset}
    assert segment_bytes(plain) == plain_before
    assert manager.run_cleaner() == 0
    expected = [(r.offset, r.key, r.value) for r in records_of(log)]
    manager.shutdown()
    manager = LogManager([tmp_path / "d"], {"segment.bytes": "600"}, time_ms=clock)
    manager.startup({"t": {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.1"}})
    reopened = manager.get_log("t", 0)
    assert reopened is not None and reopened.cleaner_checkpoint == checkpoint[("t", 0)]
    reopened.high_watermark = reopened.log_end_offset
    assert manager.run_cleaner() == 0  # nothing dirty since the checkpoint
    assert [(r.offset, r.key, r.value) for r in records_of(reopened)] == expected
    manager.shutdown()


def test_manager_with_the_cleaner_disabled(tmp_path: Path, clock: Clock) -> None:
    manager = LogManager([tmp_path / "d"], {}, time_ms=clock, cleaner=CleanerConfig(enable=False))
    manager.startup()
    log = manager.get_or_create_log("t", 0, {"cleanup.policy": "compact", "segment.bytes": "600"})
    append(log, updates(4, 10))
    assert manager.run_cleaner() == 0
    manager.shutdown()


def test_compacted_log_recovers_before_its_topic_config_is_known(tmp_path: Path, clock: Clock) -> None:
    """Logs load before topic configs arrive (with the default cleanup.policy=delete): their entry in
    cleaner-offset-checkpoint, written when the log became compacted, lets recovery accept the gaps."""
    manager = LogManager([tmp_path / "d"], {"segment.bytes": "600"}, time_ms=clock)
    manager.startup()
    log = manager.get_or_create_log("t", 0, {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.1"})
    assert read_checkpoint(tmp_path / "d" / CLEANER_OFFSET_CHECKPOINT) == {("t", 0): 0}
    append(log, updates(4, 10))
    assert compact(log, clock.now) is not None  # not through the manager: the file still says 0
    expected = [(r.offset, r.key, r.value) for r in records_of(log)]
    log.wait_for_background()  # no file vanishes under the copy
    shutil.copytree(tmp_path / "d", tmp_path / "crashed")  # a kill -9 image: no clean shutdown marker
    manager.shutdown()
    crashed = LogManager([tmp_path / "crashed"], {"segment.bytes": "600"}, time_ms=clock)
    crashed.startup()
    reopened = crashed.get_log("t", 0)
    assert reopened is not None and not reopened.config.compact
    assert [(r.offset, r.key, r.value) for r in records_of(reopened)] == expected
    crashed.update_topic_config("t", {"cleanup.policy": "delete"})
    assert reopened.cleaner_checkpoint is not None  # kept: the gaps stay legal
    crashed.shutdown()


def test_topic_becoming_compacted_gets_its_checkpoint_entry_first(tmp_path: Path, clock: Clock) -> None:
    manager = LogManager([tmp_path / "d"], {}, time_ms=clock)
    manager.startup()
    manager.get_or_create_log("t", 0)
    assert read_checkpoint(tmp_path / "d" / CLEANER_OFFSET_CHECKPOINT) == {}
    manager.update_topic_config("t", {"cleanup.policy": "compact,delete"})
    assert read_checkpoint(tmp_path / "d" / CLEANER_OFFSET_CHECKPOINT) == {("t", 0): 0}
    manager.shutdown()


def test_aborted_transactions_are_removed_and_never_shadow_committed_values(tmp_path: Path, clock: Clock) -> None:
    """An aborted record must not count as its key's latest value (the committed one would go with it),
    the aborted records themselves go, markers stay; an open transaction's records are not cleaned."""
    from odradek.protocol.records import build_marker

    log = open_log(tmp_path / "t-0", clock=clock)

    def txn(pid: int, seq: int, key: bytes, value: bytes) -> None:
        log.append_as_leader(build_batch([(key, value)], timestamp=T0, producer_id=pid, producer_epoch=0,
                                         base_sequence=seq, is_transactional=True), 3)

    def end(pid: int, commit: bool) -> None:
        log.append_as_leader(build_marker(pid, 0, commit, coordinator_epoch=1, timestamp=T0), 3,
                             origin=AppendOrigin.COORDINATOR)

    txn(7, 0, b"k", b"committed")
    end(7, commit=True)
    txn(7, 1, b"k", b"aborted")
    end(7, commit=False)
    append(log, [(b"filler%d" % i, b"x" * 40) for i in range(12)])  # roll past the markers
    txn(8, 0, b"k", b"open")  # ongoing: above the last stable offset
    append(log, [(b"more%d" % i, b"y" * 40) for i in range(12)])
    log.high_watermark = log.log_end_offset
    assert compact(log, clock.now) is not None
    values = [r.value for r in records_of(log) if r.key == b"k"]
    assert values == [b"committed", b"open"]
    markers = [h for h, _ in batches_of(log) if h.is_control]
    assert len(markers) == 2
    assert log.collect_aborted(0, log.log_end_offset) == [(7, 2)]
    log.close()
