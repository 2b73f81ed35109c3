"""The client side that the tools (`odradek <tool>`, in `cli/`) and the web console (`console/`) share, and the
Kafka machinery of the clients of the cluster above them (Connect's distributed worker, the schema registry).

- `errors`: the one-line failures (`CliError`, `UsageError`) and librdkafka errors in Kafka's words.
- `connect`: librdkafka client configurations from Kafka-style property layers, the bootstrap flags and
  the bounded probe that proves a client reached a broker.
- `command`: the command-line frame (argparse with one-line usage errors, `run_tool`'s exit codes).
- `offsets`: ListOffsets over an AdminClient.
- `topic_configs`: a topic as the config resource to describe or alter incrementally.
- `model`: what a cluster is described as (brokers, topics and partitions, consumer groups) and Kafka's
  names of group states.
- `topic_log`: `KafkaTopicLog`, a compacted topic kept as state (Kafka's KafkaBasedLog): Connect's config,
  offsets and status topics, the registry's `_schemas`.
- `group_member`: `GroupMember`, a member of a classic-protocol group librdkafka does not join: a Connect
  worker's group, the registry's primary election.

Nothing here knows Odradek's internals: it speaks to any Kafka-compatible cluster.
"""
