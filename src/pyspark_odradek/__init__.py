"""Spark 4 registers every installed top-level module named `pyspark_*` that defines a `DefaultSource`
(pyspark's sql/worker/lookup_data_sources.py), so `spark.read.format("odradek")` works in any
SparkSession once this package is installed, with no register call."""

from odradek.spark.source import OdradekDataSource as DefaultSource

__all__ = ["DefaultSource"]
