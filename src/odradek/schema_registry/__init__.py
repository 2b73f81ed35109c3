"""A schema registry with Confluent Schema Registry's REST API: subjects, versions and ids of Avro, JSON Schema
and Protobuf schemas, kept in the compacted `_schemas` topic, checked for compatibility per format."""
