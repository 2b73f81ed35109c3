"""The one error every schema format raises for a schema it refuses (kept apart so the formats and the seam
`schemas` can both import it)."""


class SchemaError(ValueError):
    """The schema is not valid for its type (the registry's 42201, "Invalid schema"); the message says why."""
