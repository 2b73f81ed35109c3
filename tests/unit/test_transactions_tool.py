"""`odradek transactions` without a broker: Kafka's table layout, the rows of each command, find-hanging's
selection, the abort marker built from a partition's producers, and the flag checks made before any
connection."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.cli import transactions as tx
from odradek.cli.transactions import Description, Listing, ProducerState, TopicPartition

TP0 = TopicPartition("orders", 0)
TP1 = TopicPartition("orders", 1)
NOW = 1_700_000_000_000
MINUTE = 60_000


def producer(pid: int, start: int = -1, last_ts: int = NOW, coordinator_epoch: int = -1) -> ProducerState:
    return ProducerState(pid, 3, 7, last_ts, coordinator_epoch, start)


def test_table_pads_every_cell_and_ends_each_with_a_tab() -> None:
    out = tx.table(("A", "Longer"), [["xyz", 1], ["", "22"]])
    assert out.splitlines() == ["A  \tLonger\t", "xyz\t1     \t", "   \t22    \t"]
    assert tx.table(("Only", "Headers"), []) == "Only\tHeaders\t"


def test_list_rows_by_broker_in_id_order_with_kafka_state_names() -> None:
    rows = tx.list_rows({2: [Listing("b", 9, "Ongoing")],
                         0: [Listing("a", 4, "CompleteCommit"), Listing("c", 5, "Dead")]})
    assert rows == [["a", 0, 4, "CompleteCommit"], ["c", 0, 5, "Unknown"], ["b", 2, 9, "Ongoing"]]


def test_describe_row() -> None:
    d = Description(1, "tid", 4, 0, "Ongoing", 60000, NOW - 1500, frozenset({TP1, TP0, TopicPartition("a", 2)}))
    assert tx.describe_row(d, NOW) == [1, "tid", 4, 0, "Ongoing", 60000, NOW - 1500, 1500, "a-2,orders-0,orders-1"]
    empty = d._replace(state="Empty", start_time_ms=-1, partitions=frozenset())
    assert tx.describe_row(empty, NOW)[5:] == [60000, "None", "None", ""]


def test_producer_row() -> None:
    assert tx.producer_row(producer(5)) == [5, 3, -1, 7, NOW, "None"]
    assert tx.producer_row(producer(5, start=42, coordinator_epoch=2)) == [5, 3, 2, 7, NOW, "42"]


def test_open_transactions_need_a_start_offset_and_to_be_older_than_the_timeout() -> None:
    old, young, closed = producer(1, 10, NOW - 20 * MINUTE), producer(2, 11, NOW - MINUTE), producer(3, -1, 0)
    found = tx.open_transactions({TP0: [old, young, closed]}, NOW, 15 * MINUTE)
    assert found == [(TP0, old)]
    assert tx.open_transactions({TP0: [young]}, NOW, 0) == [(TP0, young)]


def test_hanging_transactions_are_those_no_coordinator_will_complete() -> None:
    unknown_pid, unknown_tid, other_partition, in_progress = (
        (TP0, producer(1, 5)), (TP0, producer(2, 6)), (TP1, producer(3, 7)), (TP0, producer(3, 8)))
    candidates = [unknown_pid, unknown_tid, other_partition, in_progress]
    tids = {2: "gone", 3: "live"}
    descriptions: dict[str, Description | None] = {
        "gone": None, "live": Description(0, "live", 3, 0, "Ongoing", 60000, NOW, frozenset({TP0}))}
    assert tx.hanging_transactions(candidates, tids, descriptions) == [unknown_pid, unknown_tid, other_partition]


def test_hanging_row() -> None:
    assert tx.hanging_row(TP1, producer(8, 40, NOW - 20 * MINUTE - 1), NOW) == [
        "orders", 1, 8, 3, -1, 40, NOW - 20 * MINUTE - 1, 20]


def test_abort_spec_from_the_producer_whose_transaction_starts_there() -> None:
    producers = [producer(1), producer(2, 40, coordinator_epoch=-1), producer(3, 50, coordinator_epoch=4)]
    assert tx.abort_spec_for(TP0, producers, 40) == tx.AbortSpec(TP0, 2, 3, 0)
    assert tx.abort_spec_for(TP0, producers, 50) == tx.AbortSpec(TP0, 3, 3, 4)
    assert tx.abort_spec_for(TP0, producers, -1) is None
    assert str(tx.AbortSpec(TP0, 2, 3, 0)) == (
        "AbortTransactionSpec(topicPartition=orders-0, producerId=2, producerEpoch=3, coordinatorEpoch=0)")


def test_failure_line() -> None:
    assert tx.failure("Failed to list transactions", "The coordinator is not available.") == (
        "Failed to list transactions: The coordinator is not available. Enable debug logging for additional detail.")
    assert tx.error_message(105) == "The transactionalId could not be found."
    assert tx.error_message(73) == "TOPIC_DELETION_DISABLED"


@pytest.mark.parametrize(("args", "message"), [
    ([], 'Error: Missing required argument "[COMMAND]"'),
    (["list"], None),
    (["abort", "--topic", "t", "--partition", "0"],
     "The transaction to abort must be identified either with --start-offset (for brokers on 3.0 or above) or "
     "with --producer-id, --producer-epoch, and --coordinator-epoch (for older brokers)"),
    (["abort", "--topic", "t", "--partition", "0", "--producer-id", "1", "--producer-epoch", "0"],
     "Missing required argument --coordinator-epoch"),
    (["abort", "--topic", "t", "--partition", "0", "--producer-id", "1", "--producer-epoch", "40000",
      "--coordinator-epoch", "0"], "Error: argument --producer-epoch: invalid Short value: '40000'"),
    (["find-hanging", "--topic", "t", "--max-transaction-timeout", "x"],
     "Error: argument --max-transaction-timeout: invalid int value: 'x'"),
])
def test_flag_errors_before_any_connection(args: list[str], message: str | None,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    # an address nothing listens on: these fail before connecting
    bootstrap = ["--bootstrap-server", "127.0.0.1:1"]
    if message is None:  # no --bootstrap-server
        assert tx.main(args) == 1
        assert capsys.readouterr().err.strip() == 'Error: Missing required argument "[bootstrap-server]"'
        return
    assert tx.main(bootstrap + args) == 1
    assert capsys.readouterr().err.strip() == message


def test_command_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "admin.properties"
    config.write_text("client.id=ops\n")
    assert tx.admin_properties(str(config)) == {"client.id": "ops"}
    assert tx.admin_properties(None) == {}
    config.write_text("security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n")
    assert tx.main(["--bootstrap-server", "127.0.0.1:1", "--command-config", str(config), "list"]) == 1
    assert capsys.readouterr().err.strip() == ("Error: sasl.mechanism GSSAPI is not supported: use one of PLAIN, "
                                               "SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER")
    assert tx.main(["--bootstrap-server", "127.0.0.1:1", "--command-config", str(tmp_path / "none"), "list"]) == 1
    assert capsys.readouterr().err.startswith("Failed to load admin client properties: cannot read")
