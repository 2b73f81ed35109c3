"""Odradek: a Kafka-wire-compatible, partitioned, replicated commit log."""

__version__ = "0.1.0"
