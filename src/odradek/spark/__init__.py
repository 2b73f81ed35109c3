"""PySpark connector for Odradek (and any Kafka cluster): `format("odradek")` for batch and streaming reads
and writes, with the option names, defaults and row schema of Spark's built-in Kafka source and sink.

    from odradek.spark import local_session
    spark = local_session()    # any SparkSession works: Spark registers pyspark_odradek.DefaultSource itself
    df = (spark.readStream.format("odradek")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092").option("subscribe", "events").load())

Needs the `spark` extra (pyspark >= 4.2, pyarrow). Modules: options/offsets/resolve (what to read),
metadata (cluster look-ups on the driver), fetcher/arrow_rows (executor reads), producer/writers (sink),
source (the DataSource), session (a SparkSession, local or on a standalone master), avro (`from_avro`:
Avro columns, plain or in Confluent's wire format with a schema registry, decoded in the executors).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession

FORMAT = "odradek"


def register(spark: SparkSession) -> None:
    """Make format("odradek") available in `spark`."""
    from odradek.spark.session import register as _register

    _register(spark)


def local_session(*args: Any, **kwargs: Any) -> SparkSession:
    """A local SparkSession with format("odradek") registered (see odradek.spark.session.local_session)."""
    from odradek.spark.session import local_session as _local

    return _local(*args, **kwargs)


def stop_session(spark: SparkSession | None) -> None:
    """Stop a session made by local_session and its JVM."""
    from odradek.spark.session import stop_session as _stop

    _stop(spark)


def from_avro(*args: Any, **kwargs: Any) -> Column:
    """Databricks' from_avro: an Avro binary column decoded (see odradek.spark.avro.from_avro)."""
    from odradek.spark.avro import from_avro as _from_avro

    return _from_avro(*args, **kwargs)
