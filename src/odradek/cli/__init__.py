"""Command-line tools of Odradek: `odradek <tool> [args]`, shaped like Kafka's `kafka-*.sh` scripts.

`odradek.cli.main` dispatches to one module per tool. What they share with the web console (client
configuration, one-line error reporting, ListOffsets) is in `odradek.admin_client`; `odradek.cli.common`
holds the few flag helpers only the tools use.
"""
