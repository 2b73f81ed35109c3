"""Faults beyond kill -9 (issue #29): paused processes, expired ZooKeeper sessions, and what a broker must
do after them. Each test starts its own brokers and ZooKeeper on 127.0.0.1 and stops them by pid."""
