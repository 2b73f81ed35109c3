"""Partitions as replicas: leadership, ISR, high watermark, and (in cluster mode) follower fetching."""
