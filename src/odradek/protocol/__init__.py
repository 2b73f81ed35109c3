"""Sans-io Kafka protocol: framing, codecs, record batches, error codes. No sockets, no disk."""
