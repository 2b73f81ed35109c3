"""The broker's loggers as Kafka's BROKER_LOGGER config resource: every Python logger of the process
(and `root`) with its effective level under Kafka's names, and live level changes. Kafka's levels map
onto Python's: TRACE 5 (a level Python lacks, named here), DEBUG, INFO, WARN (WARNING), ERROR, FATAL
(CRITICAL). Validation and messages follow Kafka's RuntimeLoggerManager."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import NamedTuple

from odradek.protocol.errors import ErrorCode, KafkaError

ROOT_LOGGER = "root"
TRACE = 5
LEVELS: dict[str, int] = {
    "TRACE": TRACE,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "ERROR": logging.ERROR,
    "FATAL": logging.CRITICAL,
}
VALID_LEVELS = ", ".join(sorted(LEVELS))
OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3

logging.addLevelName(TRACE, "TRACE")
log = logging.getLogger("odradek.server")


class LoggerOp(NamedTuple):
    name: str
    operation: int
    value: str | None


def level_name(level: int) -> str:
    """Kafka's name of a Python level: the highest Kafka level at or below it (TRACE below TRACE)."""
    name = "TRACE"
    for kafka_name, number in sorted(LEVELS.items(), key=lambda item: item[1]):
        if level >= number:
            name = kafka_name
    return name


def _existing(name: str) -> logging.Logger | None:
    if name == ROOT_LOGGER:
        return logging.getLogger()
    found = logging.Logger.manager.loggerDict.get(name)
    return found if isinstance(found, logging.Logger) else None


def loggers() -> dict[str, str]:
    """Every logger that exists, by name, with its effective level's Kafka name."""
    out = {ROOT_LOGGER: level_name(logging.getLogger().getEffectiveLevel())}
    for name, found in sorted(logging.Logger.manager.loggerDict.items()):
        if isinstance(found, logging.Logger):
            out[name] = level_name(found.getEffectiveLevel())
    return out


def validate(ops: Sequence[LoggerOp]) -> None:
    """Kafka's checks of a BROKER_LOGGER change: the logger must exist, SET takes one of Kafka's levels
    (case matters), DELETE (unset) is refused for root, APPEND and SUBTRACT are refused."""
    for op in ops:
        if op.operation in (OP_SET, OP_DELETE) and _existing(op.name) is None:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Logger {op.name} does not exist!")
        if op.operation == OP_SET:
            if op.value not in LEVELS:
                raise KafkaError(ErrorCode.INVALID_CONFIG,
                                 f"Cannot set the log level of {op.name} to {op.value} as it is not a supported"
                                 f" log level. Valid log levels are {VALID_LEVELS}")
        elif op.operation == OP_DELETE:
            if op.name == ROOT_LOGGER:
                raise KafkaError(ErrorCode.INVALID_REQUEST,
                                 f"Removing the log level of the {ROOT_LOGGER} logger is not allowed")
        elif op.operation in (OP_APPEND, OP_SUBTRACT):
            verb = "APPEND" if op.operation == OP_APPEND else "SUBTRACT"
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"{verb} operation is not allowed for the BROKER_LOGGER resource")
        else:
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             f"Unknown operation type {op.operation} is not allowed for the BROKER_LOGGER resource")


def apply(ops: Sequence[LoggerOp]) -> None:
    """Set or unset levels (call validate first); an unset logger follows its parent's level again."""
    for op in ops:
        target = _existing(op.name)
        if target is None:
            continue
        if op.operation == OP_SET and op.value is not None:
            target.setLevel(LEVELS[op.value])
            log.warning("Updated the log level of %s to %s", op.name, op.value)
        elif op.operation == OP_DELETE:
            target.setLevel(logging.NOTSET)
            log.warning("Unset the log level of %s", op.name)
