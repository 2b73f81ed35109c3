"""Leader epoch cache: where each epoch starts and ends, truncation, and the checkpoint file."""

from __future__ import annotations

from pathlib import Path

from odradek.protocol.records import build_batch
from odradek.storage.epoch_cache import LeaderEpochCache
from odradek.storage.log import Log


def test_end_offsets(tmp_path: Path) -> None:
    c = LeaderEpochCache(tmp_path)
    c.assign(0, 0)
    c.assign(2, 10)
    c.assign(5, 25)
    assert c.end_offset_for(0, 40) == (0, 10)
    assert c.end_offset_for(1, 40) == (0, 10)  # epoch 1 never led: the largest epoch below it
    assert c.end_offset_for(2, 40) == (2, 25)
    assert c.end_offset_for(7, 40) == (5, 40)
    assert LeaderEpochCache(tmp_path).entries == [(0, 0), (2, 10), (5, 25)]
    assert (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n3\n0 0\n2 10\n5 25\n"
    assert LeaderEpochCache(tmp_path / "none").end_offset_for(3, 40) == (-1, -1)


def test_an_epoch_older_than_every_known_one_ends_where_the_oldest_starts(tmp_path: Path) -> None:
    """As Kafka's cache: a follower that last fetched in epoch 0 from a leader whose log starts in epoch 1
    (at offset 0, nothing of epoch 0 kept) has not diverged; it is told (0, 0), not "unknown"."""
    c = LeaderEpochCache(tmp_path)
    c.assign(1, 0)
    c.assign(3, 50)
    assert c.end_offset_for(0, 80) == (0, 0)


def test_truncation(tmp_path: Path) -> None:
    c = LeaderEpochCache(tmp_path)
    for e, o in ((0, 0), (2, 10), (5, 25)):
        c.assign(e, o)
    c.truncate_from_end(25)
    assert c.entries == [(0, 0), (2, 10)]
    c.truncate_from_start(12)
    assert c.entries == [(2, 12)]


def test_log_keeps_its_epochs_across_truncation_and_reopen(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0")
    for epoch in (0, 0, 3, 3, 4):
        log.append_as_leader(build_batch([(None, b"x")]), epoch)
    assert log.epochs.entries == [(0, 0), (3, 2), (4, 4)]
    log.truncate_to(3)
    assert log.epochs.entries == [(0, 0), (3, 2)]
    log.close()
    (tmp_path / "t-0" / "leader-epoch-checkpoint").unlink()
    again = Log(tmp_path / "t-0")  # rebuilt from the batch headers
    assert again.epochs.entries == [(0, 0), (3, 2)]


def test_a_lost_or_torn_first_checkpoint_is_rebuilt_from_the_log(tmp_path: Path) -> None:
    """A new log's first epoch entry is written without fsyncs: whatever a crash leaves of the file,
    the next load gets the entries back from the batches."""
    log = Log(tmp_path / "t-0")
    log.append_as_leader(build_batch([(None, b"x")]), 5)
    assert log.epochs.entries == [(5, 0)]
    log.close()
    path = tmp_path / "t-0" / "leader-epoch-checkpoint"
    for damage in ("", "0\n1\n", "\0\0\0\0"):
        path.write_text(damage)
        assert Log(tmp_path / "t-0").epochs.entries == [(5, 0)]
    path.unlink()
    assert Log(tmp_path / "t-0", clean_shutdown=False).epochs.entries == [(5, 0)]
