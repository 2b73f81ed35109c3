"""Kafka Connect: workers that move data between topics and other systems through connectors, a client of the
cluster like `odradek.spark`. The data model and converters (`data`, `converters`, `json_converter`), the plugin
API connectors are written against (`api`), Kafka's file connectors (`file_connectors`), plugin discovery
(`plugins`), the worker's configuration, offsets and task loops (`worker_config`, `offset_store`, `worker`) and
the REST API (`rest`)."""
