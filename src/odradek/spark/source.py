"""The `odradek` data source: Spark's Kafka connector options and schema over confluent-kafka."""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from odradek.spark.options import parse_sink_options, parse_source_options
from odradek.spark.schema import check_user_schema, source_schema

FORMAT = "odradek"


class OdradekDataSource(DataSource):
    """format("odradek"): batch and streaming reads and writes of Kafka topics."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def _include_headers(self) -> bool:
        return str(self.options.get("includeHeaders", "false")).strip().lower() == "true"

    def schema(self) -> StructType:
        return source_schema(self._include_headers())

    def reader(self, schema: StructType) -> DataSourceReader:
        from odradek.spark.batch_reader import KafkaBatchReader

        opts = parse_source_options(self.options, streaming=False)
        check_user_schema(schema, opts.include_headers)
        return KafkaBatchReader(opts)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from odradek.spark.stream_reader import KafkaStreamReader

        opts = parse_source_options(self.options, streaming=True)
        check_user_schema(schema, opts.include_headers)
        return KafkaStreamReader(opts)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from odradek.spark.writers import KafkaBatchWriter

        if overwrite:
            raise ValueError("Save mode Overwrite is not allowed for Kafka; use Append")
        return KafkaBatchWriter(parse_sink_options(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from odradek.spark.writers import KafkaStreamWriter

        return KafkaStreamWriter(parse_sink_options(self.options), schema)
