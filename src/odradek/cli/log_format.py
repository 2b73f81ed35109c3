"""The one format of the long-running commands' log lines (Kafka's `[time] LEVEL message (logger)`)."""

LOG_FORMAT = "[%(asctime)s] %(levelname)s %(message)s (%(name)s)"
