"""Names vulture (`vulture`, settings in pyproject.toml) reports as unused that are used from outside our
code. Only real false positives belong here, each with the reason."""

# PySpark's DataSourceStreamWriter.commit(messages, batchId) / abort(messages, batchId): Spark calls the
# overrides with both arguments; the writer has nothing to do with the batch id (spark/writers.py).
batchId  # noqa
