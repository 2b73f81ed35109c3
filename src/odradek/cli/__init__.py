"""Command-line tools of Odradek: `odradek <tool> [args]`, shaped like Kafka's `kafka-*.sh` scripts.

`odradek.cli.main` dispatches to one module per tool; `odradek.cli.common` holds what they share
(flag parsing helpers, client configuration, one-line error reporting).
"""
