"""`odradek dump-log`: print the contents of log segment files, like Kafka's DumpLogSegments.

`.log` files: one line per record batch (offsets, producer fields, position, timestamp, size,
codec, CRC and whether it checks out) and, with `--deep-iteration` or `--print-data-log`, one
`| offset: ...` line per record. `.index` and `.timeindex` files: one line per entry. Batches are
read with `odradek.protocol.records`; a corrupt batch is shown as `isvalid: false` and the dump
goes on, a torn tail is reported as invalid trailing bytes. Keys and payloads are printed as
UTF-8 text with control characters escaped (`\x0a`), so every record stays on one line.
"""

from __future__ import annotations

import argparse
import mmap
import struct
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from crc32c import crc32c

from odradek.admin_client.command import ArgParser, run_tool
from odradek.admin_client.errors import CliError, UsageError
from odradek.protocol import records as rec
from odradek.storage.producer_state import ProducerStateManager
from odradek.storage.txn_index import read_index

DELETE_HORIZON_MASK = 0x40
TIMESTAMP_TYPES = {0: "CreateTime", 1: "LogAppendTime"}
CONTROL_TYPES = {0: "ABORT", 1: "COMMIT"}
INDEX_ENTRY = struct.Struct(">ii")
TIMEINDEX_ENTRY = struct.Struct(">qi")
INT32_MAX = 0x7FFFFFFF
CONTROL_ESCAPES = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F]}


def build_parser() -> ArgParser:
    parser = ArgParser(
        "dump-log",
        "Print the record batches of .log segment files and the entries of .index/.timeindex files.",
    )
    parser.add_argument("paths", nargs="*", metavar="FILE", help="segment files (.log, .index, .timeindex)")
    parser.add_argument("--files", action="append", metavar="FILE[,FILE]", help="comma-separated files to dump")
    parser.add_argument("--print-data-log", action="store_true", help="print record keys and payloads")
    parser.add_argument("--deep-iteration", action="store_true", help="print one line per record")
    parser.add_argument("--skip-record-metadata", action="store_true", help="print only keys and payloads")
    return parser


def files_of(opts: argparse.Namespace) -> list[str]:
    files = list(opts.paths)
    for item in opts.files or ():
        files += [f for f in item.split(",") if f]
    if not files:
        raise UsageError('Error: Missing required argument "[files]"')
    return files


# --- .log -------------------------------------------------------------------------------------


def last_sequence(header: rec.BatchHeader) -> int:
    if header.base_sequence < 0:
        return -1
    return (header.base_sequence + header.last_offset_delta) % (INT32_MAX + 1)


def delete_horizon(header: rec.BatchHeader) -> str:
    if header.attributes & DELETE_HORIZON_MASK:
        return f"OptionalLong[{header.base_timestamp}]"
    return "OptionalLong.empty"


def batch_is_valid(buf: Any, pos: int, header: rec.BatchHeader) -> bool:
    return crc32c(buf[pos + rec.ATTRIBUTES_OFFSET : pos + header.size]) == header.crc


def batch_line(header: rec.BatchHeader, pos: int, valid: bool) -> str:
    codec = rec.CODEC_NAMES.get(header.compression, f"unknown({header.compression})")
    return (
        f"baseOffset: {header.base_offset} lastOffset: {header.last_offset} count: {header.records_count} "
        f"baseSequence: {header.base_sequence} lastSequence: {last_sequence(header)} "
        f"producerId: {header.producer_id} producerEpoch: {header.producer_epoch} "
        f"partitionLeaderEpoch: {header.partition_leader_epoch} "
        f"isTransactional: {str(header.is_transactional).lower()} isControl: {str(header.is_control).lower()} "
        f"deleteHorizonMs: {delete_horizon(header)} position: {pos} "
        f"{TIMESTAMP_TYPES[header.timestamp_type]}: {header.max_timestamp} size: {header.size} "
        f"magic: {header.magic} compresscodec: {codec} crc: {header.crc} isvalid: {str(valid).lower()}"
    )


def show(data: bytes) -> str:
    """Keys and payloads as UTF-8 text, control characters escaped so a record stays on one line."""
    return data.decode("utf-8", "replace").translate(CONTROL_ESCAPES)


def record_line(header: rec.BatchHeader, record: rec.Record, opts: argparse.Namespace) -> str:
    parts = ["|"]
    if not opts.skip_record_metadata:
        sequence = -1 if header.base_sequence < 0 else header.base_sequence + record.offset - header.base_offset
        parts.append(
            f"offset: {record.offset} {TIMESTAMP_TYPES[header.timestamp_type]}: {record.timestamp} "
            f"keySize: {-1 if record.key is None else len(record.key)} "
            f"valueSize: {-1 if record.value is None else len(record.value)} sequence: {sequence} "
            f"headerKeys: [{','.join(name for name, _ in record.headers)}]"
        )
    if header.is_control:
        parts.append(control_text(record))
    elif opts.print_data_log:
        if record.key is not None:
            parts.append(f"key: {show(record.key)}")
        if record.value is not None:
            parts.append(f"payload: {show(record.value)}")
    return " ".join(parts)


def control_text(record: rec.Record) -> str:
    """Kafka's description of a transaction marker."""
    key, value = record.key or b"", record.value or b""
    if len(key) < 4:
        return "unknownControlKey"
    kind = struct.unpack_from(">h", key, 2)[0]
    if kind not in CONTROL_TYPES:
        return f"unknownControlKey: {kind}"
    epoch = struct.unpack_from(">i", value, 2)[0] if len(value) >= 6 else -1
    return f"endTxnMarker: {CONTROL_TYPES[kind]} coordinatorEpoch: {epoch}"


def batch_records(buf: Any, pos: int, header: rec.BatchHeader, opts: argparse.Namespace) -> Iterator[str]:
    try:
        records = rec.decode_records(buf[pos : pos + header.size])
    except Exception as exc:
        yield f"| cannot decode the records of this batch: {exc}"
        return
    for record in records:
        yield record_line(header, record, opts)


def dump_log(path: Path, buf: Any, opts: argparse.Namespace) -> Iterator[str]:
    yield f"Log starting offset: {base_offset_of(path)}"
    deep = opts.deep_iteration or opts.print_data_log
    end = 0
    batches = rec.iter_batches(buf)
    while True:
        try:
            item = next(batches, None)
        except Exception as exc:
            yield f"Stopped at position {end}: {exc}"
            break
        if item is None:
            break
        pos, header = item
        valid = batch_is_valid(buf, pos, header)
        yield batch_line(header, pos, valid)
        if deep:
            yield from batch_records(buf, pos, header, opts)
        end = pos + header.size
    if len(buf) > end:
        yield f"Found {len(buf) - end} invalid bytes at the end of {path.name}"


# --- indexes ----------------------------------------------------------------------------------


def base_offset_of(path: Path) -> int:
    stem = path.name.split(".")[0]
    return int(stem) if stem.isdigit() else 0


def dump_index(path: Path, buf: Any) -> Iterator[str]:
    base = base_offset_of(path)
    for i in range(len(buf) // INDEX_ENTRY.size):
        relative, position = INDEX_ENTRY.unpack_from(buf, i * INDEX_ENTRY.size)
        if i > 0 and relative == 0:  # the zero-filled, preallocated tail
            return
        yield f"offset: {base + relative} position: {position}"


def dump_timeindex(path: Path, buf: Any) -> Iterator[str]:
    base = base_offset_of(path)
    for i in range(len(buf) // TIMEINDEX_ENTRY.size):
        timestamp, relative = TIMEINDEX_ENTRY.unpack_from(buf, i * TIMEINDEX_ENTRY.size)
        if i > 0 and relative == 0 and timestamp == 0:
            return
        yield f"timestamp: {timestamp} offset: {base + relative}"


def dump_txnindex(path: Path, buf: Any) -> Iterator[str]:
    for txn in read_index(path):
        yield (f"version: 0 producerId: {txn.producer_id} firstOffset: {txn.first_offset} "
               f"lastOffset: {txn.last_offset} lastStableOffset: {txn.last_stable_offset}")


def dump_snapshot(path: Path, buf: Any) -> Iterator[str]:
    state = ProducerStateManager()
    try:
        state.read_snapshot(path)
    except ValueError as exc:
        raise CliError(f"Error: {exc}") from None
    for pid, e in sorted(state.producers.items()):
        last = e.batches[-1] if e.batches else None
        yield (f"producerId: {pid} producerEpoch: {e.epoch} coordinatorEpoch: {e.coordinator_epoch} "
               f"currentTxnFirstOffset: {e.txn_first_offset if e.txn_first_offset >= 0 else 'None'} "
               f"lastTimestamp: {e.last_timestamp} firstSequence: {last.first_seq if last else -1} "
               f"lastSequence: {last.last_seq if last else -1} lastOffset: {last.last_offset if last else -1} "
               f"offsetDelta: {(last.last_offset - last.first_offset) if last else 0}")


# --- files ------------------------------------------------------------------------------------


@contextmanager
def mapped(path: Path) -> Iterator[Any]:
    """The file's bytes, memory-mapped (segments can be large); b'' for an empty file."""
    try:
        f = path.open("rb")
    except OSError as exc:
        raise CliError(f"Error: cannot read {path}: {exc.strerror or exc}") from None
    with f:
        if path.stat().st_size == 0:
            yield b""
            return
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as view:
            yield view


def dump_file(name: str, opts: argparse.Namespace) -> None:
    path = Path(name)
    if path.suffix not in (".log", ".index", ".timeindex", ".txnindex", ".snapshot"):
        print(f"Ignoring unknown file {path}", file=sys.stderr)
        return
    with mapped(path) as buf:
        print(f"Dumping {path}")
        dumpers = {".index": dump_index, ".timeindex": dump_timeindex, ".txnindex": dump_txnindex,
                   ".snapshot": dump_snapshot}
        lines = dump_log(path, buf, opts) if path.suffix == ".log" else dumpers[path.suffix](path, buf)
        for line in lines:
            print(line)


def execute(argv: list[str]) -> int:
    opts = build_parser().parse_args(argv)
    for name in files_of(opts):
        dump_file(name, opts)
    sys.stdout.flush()
    return 0


def main(argv: list[str]) -> int:
    return run_tool(lambda: execute(argv))
