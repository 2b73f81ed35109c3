"""One-line failures, and librdkafka's errors in Kafka's words."""

from __future__ import annotations

from collections.abc import Mapping

from confluent_kafka import KafkaError


class CliError(Exception):
    """A failure reported to the user as exactly one line on stderr."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class UsageError(CliError):
    """Bad or missing command-line flags."""


# librdkafka errors meaning "no broker could be talked to".
UNREACHABLE_CODES = frozenset(
    {
        KafkaError._TRANSPORT,
        KafkaError._TIMED_OUT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._RESOLVE,
        KafkaError._WAIT_COORD,
    }
)

# Kafka's wording (org.apache.kafka.common.protocol.Errors) for the codes the group tools report themselves.
ERROR_MESSAGES = {
    3: "This server does not host this topic-partition.",
    15: "The coordinator is not available.",
    16: "This is not the correct coordinator.",
    24: "The configured groupId is invalid.",
    25: "The coordinator is not aware of this member.",
    30: "Group authorization failed.",
    68: "The group is not empty.",
    69: "The group id does not exist.",
    86: "The consumer group is actively subscribed to the topic",
}


def kafka_message(exc: BaseException) -> str:
    """The human text of a KafkaException (or any exception)."""
    err = exc.args[0] if exc.args else None
    if isinstance(err, KafkaError):
        return err.str()
    return str(exc) or type(exc).__name__


def error_text(exc: BaseException) -> str:
    """'NAME: message' of a KafkaException, in Kafka's words where known."""
    err = exc.args[0] if exc.args else None
    if err is None or not hasattr(err, "code"):
        return kafka_message(exc)
    message = ERROR_MESSAGES.get(err.code()) or err.str().removeprefix("Broker: ")
    return f"{err.name()}: {message}"


def error_message(code: int, messages: Mapping[int, str] = ERROR_MESSAGES) -> str:
    """Kafka's message for an error code of a protocol response, from `messages` (its name where we do not
    keep the wording)."""
    if code in messages:
        return messages[code]
    from odradek.protocol.errors import ErrorCode

    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error code {code}"
