"""The log: partitions as segment files on disk in Kafka's layout. Knows files, not the network."""
