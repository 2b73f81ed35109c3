"""Clients' side of a schema registry: Confluent's wire format (`wire`), a REST client with caches
(`registry_client`), Avro serializers and deserializers over them (`avro`) and Avro's JSON encoding read
from the binary (`avro_json`).

Below `spark` and `pipelines` in the layers (it imports nothing of ours), so that the Spark source's
decoding, the weblogs pipeline, the console consumer and the web console share one implementation. The registry's server is
`odradek.schema_registry`, which this package never imports: it speaks to any Confluent-compatible registry.
"""
