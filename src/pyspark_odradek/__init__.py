"""Makes `format("odradek")` available in every SparkSession, with no register call.

Spark 4 looks, once per session's JVM, for installed top-level modules named `pyspark_*` that define a
`DefaultSource` (a `DataSource` subclass) and registers each under its `name()`
(pyspark/sql/worker/lookup_data_sources.py). This module is that entry point for Odradek's source; it
imports only the light source module (no Kafka client), because a failing import here would break the
lookup of every Python data source. `odradek.spark.register(spark)` still works and registers the same class.
"""

from odradek.spark.source import OdradekDataSource as DefaultSource

__all__ = ["DefaultSource"]
