"""Cluster coordination: metadata store (ZooKeeper or embedded), controller, metadata cache."""
