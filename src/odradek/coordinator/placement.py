"""Where a coordinator key lives: partition `abs(java_hash(key)) % partitions`, with Kafka's `Utils.abs`
(`Integer.MIN_VALUE` maps to 0), so a key lands where a Kafka broker would put it."""

from __future__ import annotations


def java_string_hash(s: str) -> int:
    """Java's String.hashCode: over UTF-16 code units, 32-bit signed overflow."""
    data = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def kafka_abs(n: int) -> int:
    """Kafka's Utils.abs: Math.abs, except Integer.MIN_VALUE (whose Math.abs is negative) gives 0."""
    return 0 if n == -(1 << 31) else abs(n)


def partition_for(key: str, num_partitions: int) -> int:
    return kafka_abs(java_string_hash(key)) % num_partitions
