"""Transactions (KIP-98): the transaction coordinator and its state in `__transaction_state`.

- `schemas`: Kafka's key/value formats of the records in `__transaction_state`.
- `state`: one transactional id's metadata and its state machine (Empty -> Ongoing -> PrepareCommit /
  PrepareAbort -> CompleteCommit / CompleteAbort); pure state, no I/O.
- `markers`: writing commit/abort markers to the partitions of a transaction, locally (`MarkerWriter`) or
  through WriteTxnMarkers to their leaders (`MarkerSender`), retried until written.
- `coordinator`: `TransactionCoordinator`, what the request handlers call; it keeps the metadata in
  `__transaction_state` on the coordinator runtime (`odradek.coordinator`), as its `CoordinatorShard`.

Markers, the last stable offset and the aborted-transaction index live in `odradek.storage`.
"""

from __future__ import annotations

TRANSACTION_STATE_TOPIC = "__transaction_state"
