"""The console consumer's Avro formatter: Confluent's `io.confluent.kafka.formatter.AvroMessageFormatter`,
which its `kafka-avro-console-consumer` uses, over the schema registry of `schema.registry.url`.

Values (and keys, unless `key.deserializer` names a plain deserializer such as Kafka's StringDeserializer)
are read from Confluent's wire format and printed as Avro's JSON encoding; `print.schema.ids=true` adds the
schema id after each, behind `schema.id.separator` (a tab by default). A record that does not decode (no
magic byte, an unknown id, a truncated payload, a registry that cannot be reached) raises RecordError,
naming the topic, partition and offset: the console consumer stops on it, or with --skip-message-on-error
says so on stderr and goes on, as Kafka's does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from odradek.cli.common import parse_bool
from odradek.serde.avro import AvroDeserializer, DecodeError
from odradek.serde.registry_client import RegistryClient, RegistryError

AVRO_FORMATTERS = ("io.confluent.kafka.formatter.AvroMessageFormatter",)
AVRO_DESERIALIZERS = ("io.confluent.kafka.serializers.KafkaAvroDeserializer",)


class RecordError(RuntimeError):
    """One record could not be formatted; the message names it (topic-partition@offset) and says why."""


@dataclass
class AvroCodec:
    """Decodes the key and/or value of records to Avro JSON, with their schema ids."""

    deserializer: AvroDeserializer
    decode_key: bool
    print_ids: bool = False
    id_separator: bytes = b"\t"
    _errors: tuple[type[Exception], ...] = field(default=(DecodeError, RegistryError), repr=False)

    @classmethod
    def from_properties(cls, props: dict[str, str], *, decode_key: bool) -> AvroCodec:
        url = props.get("schema.registry.url", "").strip()
        if not url:
            raise ValueError('Missing required configuration "schema.registry.url" which has no default value.')
        user_info = None
        if props.get("basic.auth.credentials.source", "").strip().upper() in ("USER_INFO", "URL") or \
                "basic.auth.user.info" in props:
            user_info = props.get("basic.auth.user.info") or None
        client = RegistryClient(url, user_info=user_info)
        return cls(AvroDeserializer(client), decode_key, parse_bool(props.get("print.schema.ids")),
                   props.get("schema.id.separator", "\t").encode())

    def render(self, msg: Any, data: bytes | None, what: str) -> bytes | None:
        """`data` as Avro JSON (plus its id when asked for); None for a null key or value."""
        if data is None:
            return None
        try:
            text, schema_id = self.deserializer.to_json(data)
        except self._errors as exc:
            raise RecordError(f"cannot decode the {what} of {msg.topic()}-{msg.partition()}@{msg.offset()}: "
                              f"{exc}") from None
        out = text.encode()
        return out + self.id_separator + str(schema_id).encode() if self.print_ids else out
