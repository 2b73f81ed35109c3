"""Where a small Produce request's CPU goes, from py-spy's raw (folded) stacks of the broker: each sample is
charged to the innermost frame that belongs to one of the parts below (a frame of no part, e.g. a
dataclass's __init__, counts for its caller), and the parts are printed as shares of all samples.

    python bench/small_requests.py --base none --rounds 1 --seconds 10 --py-spy /tmp/prof
    python bench/profile_parts.py /tmp/prof.new.acks-1.txt /tmp/prof.new.acks1.txt
"""

from __future__ import annotations

import argparse
import re
from collections import Counter

# (part, pattern over "function (file") of a frame), first match wins within a frame
PARTS: list[tuple[str, str]] = [
    ("socket write of the answers (one writev per run of requests)", r"^Connection\._flush |writelines"),
    ("log append: write() to the segment", r"^_write_all \(odradek/storage/segment"),
    ("log append: batch validation (headers, CRC32C)",
     r"^(validate_as_leader|validate_batches|read_header|_check_batch_fields|check_timestamps|crc32c)\b"),
    ("ISR / high watermark bookkeeping and waiters",
     r"^Partition\.(_maybe_advance_hw|_wake_hw|_wake_data|_wake_consumers|hw_waiter) |^Log\.high_watermark "),
    ("log append: indexes, roll check, producer state, epochs", r"\(odradek/storage/"),
    ("request decode (frame, header, Produce parse)",
     r"^(FrameDecoder\.|parse_request_header|peek_api|parse_produce_request|_Reader\.|read_uvarint|"
     r"skip_tagged_fields|transactional_batches)"),
    ("response encode", r"^(encode_produce_response|frame_chunks|response_header|_length|_string|write_uvarint) "),
    ("connection: queueing, memory charge, pipelining", r"^(Connection\.|RequestMemory\.|_Done\.|_resume|_continue)"),
    ("handler and dispatcher (authorization, metrics, quotas, results)",
     r"\(odradek/server/|\(odradek/replication/partition"),
    ("event loop: uvloop, asyncio tasks and futures", r"\(asyncio/|\(uvloop/|^_settle "),
]
_COMPILED = [(name, re.compile(pattern)) for name, pattern in PARTS]
OTHER = "other (threads, logging, ...)"


def part_of(stack: list[str]) -> str:
    for frame in reversed(stack):
        for name, pattern in _COMPILED:
            if pattern.search(frame):
                return name
    return OTHER


def split(path: str) -> tuple[Counter[str], int]:
    parts: Counter[str] = Counter()
    total = 0
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip().rpartition(" ")
            if not stack:
                continue
            n = int(count)
            total += n
            parts[part_of(stack.split(";"))] += n
    return parts, total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profiles", nargs="+", help="py-spy --format raw outputs")
    args = ap.parse_args()
    for path in args.profiles:
        parts, total = split(path)
        print(f"{path}: {total} samples")
        for name, n in parts.most_common():
            print(f"  {100 * n / total:5.1f}%  {name}")


if __name__ == "__main__":
    main()
