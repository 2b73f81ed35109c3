"""Analytics pipelines that run on Odradek topics with Spark, each with its data generator.

`PIPELINES` names them for `odradek pipeline <action> <name>`; each entry is the module that provides
`generate(args)`, `run(args)` and `archive(args)` for the command-line tool.
"""

from __future__ import annotations

PIPELINES: dict[str, str] = {
    "weblogs": "odradek.pipelines.weblogs.cli",
}
