"""Kafka's single message transforms and predicates (`connect-transforms`), by their class names, and the
`transforms`/`predicates` keys of a connector that chain them: `transforms=a,b`, `transforms.a.type=...`,
`transforms.a.<key>=...`, `transforms.a.predicate=p`, `transforms.a.negate=true`, `predicates.p.type=...`.
A transform takes a record and returns one (changed or not) or None to drop it. The `$Key`/`$Value` variants
act on the key or the value; each works on schemaless values (maps) and on structs with schemas, as Kafka's."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Callable, Mapping
from typing import Any

from odradek.connect.api import ConfigException, ConnectRecord, SinkRecord
from odradek.connect.data import DATE, TIME, TIMESTAMP, DataException, Schema, Struct, struct_schema
from odradek.connect.date_format import DateFormat, PatternError

PKG = "org.apache.kafka.connect.transforms."

Transform = Callable[[ConnectRecord], ConnectRecord | None]
Predicate = Callable[[ConnectRecord], bool]


def _list(config: Mapping[str, str], key: str, default: str = "") -> list[str]:
    raw = config.get(key, default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def _required(config: Mapping[str, str], key: str, prefix: str) -> str:
    value = config.get(key)
    if value is None or not value.strip():
        raise ConfigException(f'Missing required configuration "{key}" which has no default value.' if value is None
                              else f"Invalid value {value} for configuration {prefix}{key}: String must be non-empty")
    return value


# ---- working on a key or a value -------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Side:
    """The key or the value of a record."""

    key: bool

    def get(self, record: ConnectRecord) -> tuple[Schema | None, Any]:
        return (record.key_schema, record.key) if self.key else (record.value_schema, record.value)

    def put(self, record: ConnectRecord, schema: Schema | None, value: Any) -> ConnectRecord:
        if self.key:
            return dataclasses.replace(record, key_schema=schema, key=value)
        return dataclasses.replace(record, value_schema=schema, value=value)


def _fields_of(schema: Schema | None, value: Any, transform: str) -> dict[str, Any]:
    """A struct's or a map's fields, in order; DataException for anything else (Kafka's requireStruct/Map)."""
    if schema is not None:
        if not isinstance(value, Struct):
            raise DataException(f"Only Struct objects supported for [{transform}], found: {type(value).__name__}")
        return {f.name: value.get(f.name) for f in schema.fields}
    if not isinstance(value, Mapping):
        raise DataException(f"Only Map objects supported in absence of schema for [{transform}], found: "
                            f"{type(value).__name__}")
    return dict(value)


def _struct(name: str | None, fields: list[tuple[str, Schema, Any]], like: Schema | None = None) -> tuple[Schema, Struct]:
    schema = struct_schema(like.name if like else name, [(n, s) for n, s, _ in fields],
                           like.optional if like else False)
    return schema, Struct(schema, {n: v for n, _, v in fields})


# ---- the transforms ------------------------------------------------------------------------------------

def insert_field(config: Mapping[str, str], side: Side) -> Transform:
    specs = {role: config.get(f"{role}.field") for role in ("topic", "partition", "offset", "timestamp", "static")}
    static_value = config.get("static.value")

    def parse(spec: str | None) -> tuple[str, bool] | None:
        if not spec:
            return None
        if spec.endswith("!"):
            return spec[:-1], False
        return spec.rstrip("?"), True

    wanted = {role: parsed for role, spec in specs.items() if (parsed := parse(spec)) is not None}
    types = {"topic": "string", "partition": "int32", "offset": "int64", "timestamp": "int64", "static": "string"}

    def apply(record: ConnectRecord) -> ConnectRecord | None:
        schema, value = side.get(record)
        if value is None:
            return record  # tombstones pass as they are
        values = {"topic": record.topic, "partition": record.kafka_partition, "timestamp": record.timestamp,
                  "static": static_value,
                  "offset": record.kafka_offset if isinstance(record, SinkRecord) else None}
        if "offset" in wanted and not isinstance(record, SinkRecord):
            raise DataException("Only SinkRecord supported for offset.field")
        fields = _fields_of(schema, value, "field insertion")
        if schema is None:
            return side.put(record, None, {**fields, **{name: values[role] for role, (name, _o) in wanted.items()}})
        added = [(name, Schema(types[role], optional), values[role]) for role, (name, optional) in wanted.items()]
        base = [(f.name, f.schema, fields[f.name]) for f in schema.fields]
        new_schema, struct = _struct(None, base + added, like=schema)
        return side.put(record, new_schema, struct)

    return apply


def replace_field(config: Mapping[str, str], side: Side) -> Transform:
    exclude = set(_list(config, "exclude") or _list(config, "blacklist"))
    include = set(_list(config, "include") or _list(config, "whitelist"))
    renames = {}
    for pair in _list(config, "renames"):
        old, sep, new = pair.partition(":")
        if not sep:
            raise ConfigException(f"Invalid rename mapping: {pair}")
        renames[old] = new

    def keep(name: str) -> bool:
        return name not in exclude and (not include or name in include)

    def apply(record: ConnectRecord) -> ConnectRecord | None:
        schema, value = side.get(record)
        if value is None:
            return record
        fields = _fields_of(schema, value, "field replacement")
        if schema is None:
            return side.put(record, None, {renames.get(k, k): v for k, v in fields.items() if keep(k)})
        kept = [(renames.get(f.name, f.name), f.schema, fields[f.name]) for f in schema.fields if keep(f.name)]
        return side.put(record, *_struct(None, kept, like=schema))

    return apply


_MASKS = {"int8": 0, "int16": 0, "int32": 0, "int64": 0, "float32": 0.0, "float64": 0.0, "boolean": False,
          "string": "", "bytes": b""}


def mask_field(config: Mapping[str, str], side: Side) -> Transform:
    masked = set(_list(config, "fields"))
    replacement = config.get("replacement")

    def mask(value: Any) -> Any:
        if replacement is not None:
            return type(value)(replacement) if isinstance(value, int | float | str) and not isinstance(value, bool) \
                else replacement
        if isinstance(value, bool):
            return False
        if isinstance(value, int | float | str | bytes):
            return type(value)()
        if isinstance(value, list):
            return []
        if isinstance(value, dict):
            return {}
        return None

    def apply(record: ConnectRecord) -> ConnectRecord | None:
        schema, value = side.get(record)
        if value is None:
            return record
        fields = _fields_of(schema, value, "masking")
        if schema is None:
            return side.put(record, None, {k: mask(v) if k in masked else v for k, v in fields.items()})
        out = Struct(schema, {f.name: (_MASKS.get(f.schema.type) if replacement is None else mask(fields[f.name]))
                              if f.name in masked else fields[f.name] for f in schema.fields})
        return side.put(record, schema, out)

    return apply


def value_to_key(config: Mapping[str, str], _side: Side) -> Transform:
    names = _list(config, "fields")
    if not names:
        raise ConfigException('Missing required configuration "fields" which has no default value.')

    def apply(record: ConnectRecord) -> ConnectRecord | None:
        fields = _fields_of(record.value_schema, record.value, "copying fields from value to key")
        if record.value_schema is None:
            return dataclasses.replace(record, key_schema=None, key={n: fields.get(n) for n in names})
        chosen = []
        for n in names:
            f = record.value_schema.field(n)
            if f is None:
                raise DataException(f"Field does not exist: {n}")
            chosen.append((n, f.schema, fields[n]))
        schema, struct = _struct(None, chosen)
        return dataclasses.replace(record, key_schema=schema, key=struct)

    return apply


def extract_field(config: Mapping[str, str], side: Side) -> Transform:
    name = _required(config, "field", "")

    def apply(record: ConnectRecord) -> ConnectRecord | None:
        schema, value = side.get(record)
        if value is None:
            return side.put(record, None, None)
        fields = _fields_of(schema, value, "field extraction")
        if schema is None:
            return side.put(record, None, fields.get(name))
        f = schema.field(name)
        if f is None:
            raise DataException(f"Unknown field: {name}")
        return side.put(record, f.schema, fields[name])

    return apply


def hoist_field(config: Mapping[str, str], side: Side) -> Transform:
    name = _required(config, "field", "")

    def apply(record: ConnectRecord) -> ConnectRecord | None:
        schema, value = side.get(record)
        if schema is None:
            return side.put(record, None, {name: value})
        return side.put(record, *_struct(None, [(name, schema, value)]))

    return apply


def set_schema_metadata(config: Mapping[str, str], side: Side) -> Transform:
    name = config.get("schema.name")
    version = int(config["schema.version"]) if config.get("schema.version") else None

    def apply(record: ConnectRecord) -> ConnectRecord | None:
        schema, value = side.get(record)
        if schema is None:
            raise DataException("Schema required for [updating schema metadata]")
        updated = dataclasses.replace(schema, name=name if name is not None else schema.name,
                                      version=version if version is not None else schema.version)
        if isinstance(value, Struct):
            value = Struct(updated, dict(value.values))
        return side.put(record, updated, value)

    return apply


def regex_router(config: Mapping[str, str], _side: Side) -> Transform:
    try:
        pattern = re.compile(_required(config, "regex", ""))
    except re.error as exc:
        raise ConfigException(f"Invalid value for configuration regex: {exc}") from None
    replacement = re.sub(r"\$(\d+)", r"\\g<\1>", _required(config, "replacement", ""))

    def apply(record: ConnectRecord) -> ConnectRecord | None:
        if pattern.fullmatch(record.topic):
            return dataclasses.replace(record, topic=pattern.sub(replacement, record.topic))
        return record

    return apply


def drop_headers(config: Mapping[str, str], _side: Side) -> Transform:
    names = set(_list(config, "headers"))

    def apply(record: ConnectRecord) -> ConnectRecord | None:
        return dataclasses.replace(record, headers=[h for h in record.headers if h[0] not in names])

    return apply


def insert_header(config: Mapping[str, str], _side: Side) -> Transform:
    header = _required(config, "header", "")
    literal = _required(config, "value.literal", "")

    def apply(record: ConnectRecord) -> ConnectRecord | None:
        return dataclasses.replace(record, headers=[*record.headers, (header, Schema("string"), literal)])

    return apply


def filter_all(_config: Mapping[str, str], _side: Side) -> Transform:
    return lambda _record: None


def flatten(config: Mapping[str, str], side: Side) -> Transform:
    delimiter = config.get("delimiter", ".")

    def flat_map(prefix: str, value: Mapping[str, Any], out: dict[str, Any]) -> None:
        for k, v in value.items():
            name = f"{prefix}{delimiter}{k}" if prefix else str(k)
            if isinstance(v, Mapping):
                flat_map(name, v, out)
            else:
                out[name] = v

    def flat_struct(prefix: str, schema: Schema, value: Struct | None, out: list[tuple[str, Schema, Any]]) -> None:
        for f in schema.fields:
            name = f"{prefix}{delimiter}{f.name}" if prefix else f.name
            v = value.get(f.name) if value is not None else None
            if f.schema.type == "struct":
                flat_struct(name, f.schema, v, out)
            else:
                out.append((name, f.schema.as_optional() if schema.optional else f.schema, v))

    def apply(record: ConnectRecord) -> ConnectRecord | None:
        schema, value = side.get(record)
        if value is None:
            return record
        if schema is None:
            out: dict[str, Any] = {}
            flat_map("", _fields_of(None, value, "flattening"), out)
            return side.put(record, None, out)
        fields: list[tuple[str, Schema, Any]] = []
        flat_struct("", schema, value, fields)
        return side.put(record, *_struct(None, fields, like=schema))

    return apply


_CASTS = {"int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string"}


def _cast(value: Any, target: str) -> Any:
    if value is None:
        return None
    if target == "string":
        return ("true" if value else "false") if isinstance(value, bool) else str(value)
    if target == "boolean":
        return value.lower() == "true" if isinstance(value, str) else bool(value)
    if target.startswith("int"):
        return int(float(value)) if isinstance(value, str) else int(value)
    return float(value)


def cast(config: Mapping[str, str], side: Side) -> Transform:
    spec = _list(config, "spec")
    whole: str | None = None
    per_field: dict[str, str] = {}
    for item in spec:
        name, sep, target = item.partition(":")
        if not sep:
            whole = target = name
        else:
            per_field[name] = target
        if target not in _CASTS:
            raise ConfigException(f"Invalid type found in casting spec: {target}")

    def apply(record: ConnectRecord) -> ConnectRecord | None:
        schema, value = side.get(record)
        if whole is not None:
            return side.put(record, None if schema is None else Schema(whole, schema.optional), _cast(value, whole))
        if value is None:
            return record
        fields = _fields_of(schema, value, "casting")
        if schema is None:
            return side.put(record, None, {k: _cast(v, per_field[k]) if k in per_field else v
                                           for k, v in fields.items()})
        out = [(f.name, Schema(per_field[f.name], f.schema.optional) if f.name in per_field else f.schema,
                _cast(fields[f.name], per_field[f.name]) if f.name in per_field else fields[f.name])
               for f in schema.fields]
        return side.put(record, *_struct(None, out, like=schema))

    return apply


# ---- timestamps -------------------------------------------------------------------------------------------

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_TARGETS = ("string", "unix", "Date", "Time", "Timestamp")
# unix.precision: (units per millisecond, milliseconds per unit)
_PRECISIONS = {"nanoseconds": (1_000_000, 1), "microseconds": (1000, 1), "milliseconds": (1, 1), "seconds": (1, 1000)}


def _truncate(a: int, b: int) -> int:
    """Java's integer division (toward zero), as TimeUnit conversions do."""
    q = abs(a) // b
    return q if a >= 0 else -q
_LOGICAL = {"Date": ("int32", DATE), "Time": ("int32", TIME), "Timestamp": ("int64", TIMESTAMP)}


def _one_of(config: Mapping[str, str], key: str, choices: tuple[str, ...], default: str | None = None) -> str:
    value = config.get(key, default)
    if value is None:
        raise ConfigException(f'Missing required configuration "{key}" which has no default value.')
    if value not in choices:
        raise ConfigException(f"Invalid value {value} for configuration {key}: String must be one of: "
                              f"{', '.join(choices)}")
    return value


def _date_format(pattern: str, what: str) -> DateFormat:
    try:
        return DateFormat(pattern)
    except PatternError:
        raise ConfigException(f"{what}{pattern}") from None


def timestamp_converter(config: Mapping[str, str], side: Side) -> Transform:
    field = config.get("field", "")
    target = _one_of(config, "target.type", _TARGETS)
    precision = _one_of(config, "unix.precision", tuple(_PRECISIONS), "milliseconds")
    pattern = config.get("format", "")
    if target == "string" and not pattern.strip():
        raise ConfigException("TimestampConverter requires format option to be specified when using string "
                              "timestamps")
    fmt = _date_format(pattern, "TimestampConverter requires a SimpleDateFormat-compatible pattern for string "
                                "timestamps: ") if pattern.strip() else None
    per_milli, milli_per = _PRECISIONS[precision]

    def to_millis(value: Any, kind: str) -> int:
        if kind == "string":
            if not isinstance(value, str):
                raise DataException(f"Expected string timestamp to be a String, but found {type(value).__name__}")
            if fmt is None:
                raise DataException("TimestampConverter requires format option to parse string timestamps")
            try:
                return fmt.parse(value)
            except ValueError:
                raise DataException(f"Could not parse timestamp: value ({value}) does not match pattern "
                                    f"({fmt.pattern})") from None
        if kind == "unix":
            if isinstance(value, bool) or not isinstance(value, int):
                raise DataException(f"Expected Unix timestamp to be a Long, but found {type(value).__name__}")
            return _truncate(value, per_milli) * milli_per
        if isinstance(value, dt.datetime):
            moment = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
            return (moment - _EPOCH) // dt.timedelta(milliseconds=1)
        if isinstance(value, dt.date):
            return (value - _EPOCH.date()).days * 86_400_000
        if isinstance(value, dt.time):
            return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
        raise DataException(f"Expected {kind} to be a datetime, but found {type(value).__name__}")

    def from_millis(millis: int) -> Any:
        if target == "string":
            assert fmt is not None
            return fmt.format(millis)
        if target == "unix":
            return _truncate(millis, milli_per) * per_milli
        moment = _EPOCH + dt.timedelta(milliseconds=millis)
        if target == "Date":
            return moment.date()
        if target == "Time":
            return moment.time()
        return moment

    def target_schema(optional: bool) -> Schema:
        if target in _LOGICAL:
            kind, name = _LOGICAL[target]
            return Schema(kind, optional, name, 1)
        return Schema("string" if target == "string" else "int64", optional)

    def kind_of_schema(schema: Schema) -> str:
        for kind, (_t, name) in _LOGICAL.items():
            if schema.name == name:
                return kind
        if schema.type in ("string", "int64"):
            return "string" if schema.type == "string" else "unix"
        raise DataException(f"Schema {schema.type} does not correspond to a known timestamp type format")

    def infer(value: Any) -> str:
        if isinstance(value, dt.datetime):
            return "Timestamp"
        if isinstance(value, dt.date):
            return "Date"
        if isinstance(value, dt.time):
            return "Time"
        if isinstance(value, int) and not isinstance(value, bool):
            return "unix"
        if isinstance(value, str):
            return "string"
        raise DataException(f"TimestampConverter does not support {type(value).__name__} objects as timestamps")

    def convert(value: Any, kind: str | None) -> Any:
        if value is None:
            return None
        return from_millis(to_millis(value, kind or infer(value)))

    def apply(record: ConnectRecord) -> ConnectRecord | None:
        schema, value = side.get(record)
        if schema is None:
            if value is None or not field:
                return side.put(record, None, convert(value, None))
            fields = _fields_of(None, value, "converting timestamp formats")
            return side.put(record, None, {**fields, field: convert(fields.get(field), None)})
        if not field:
            return side.put(record, target_schema(schema.optional), convert(value, kind_of_schema(schema)))
        fields = {} if value is None else _fields_of(schema, value, "converting timestamp formats")
        out = [(f.name, target_schema(f.schema.optional), convert(fields.get(f.name), kind_of_schema(f.schema)))
               if f.name == field else (f.name, f.schema, fields.get(f.name)) for f in schema.fields]
        new_schema, struct = _struct(None, out, like=schema)
        return side.put(record, new_schema, None if value is None else struct)  # a null value keeps the new schema

    return apply


def timestamp_router(config: Mapping[str, str], _side: Side) -> Transform:
    topic_format = config.get("topic.format", "${topic}-${timestamp}")
    pattern = config.get("timestamp.format", "yyyyMMdd")
    fmt = _date_format(pattern, "Invalid value for configuration timestamp.format: ")

    def apply(record: ConnectRecord) -> ConnectRecord | None:
        if record.timestamp is None:
            raise DataException(f"Timestamp missing on record: {record}")
        stamp = fmt.format(record.timestamp)
        return dataclasses.replace(record, topic=topic_format.replace("${topic}", record.topic)
                                   .replace("${timestamp}", stamp))

    return apply


def header_from(config: Mapping[str, str], side: Side) -> Transform:
    fields, headers = _list(config, "fields"), _list(config, "headers")
    for key, items in (("fields", fields), ("headers", headers)):
        if key not in config:
            raise ConfigException(f'Missing required configuration "{key}" which has no default value.')
        if not items:
            raise ConfigException(f"Invalid value [] for configuration {key}: Empty list")
    if len(fields) != len(headers):
        raise ConfigException("'fields' config must have the same number of elements as 'headers' config.")
    move = _one_of(config, "operation", ("move", "copy")) == "move"

    def apply(record: ConnectRecord) -> ConnectRecord | None:
        schema, value = side.get(record)
        purpose = f"header {'move' if move else 'copy'}"
        values = _fields_of(schema, value, purpose)
        added: list[tuple[str, Schema | None, Any]] = []
        for name, header in zip(fields, headers, strict=True):
            field_schema = None
            if schema is not None:
                f = schema.field(name)
                if f is None:
                    raise DataException(f"{name} is not a valid field name")
                field_schema = f.schema
            added.append((header, field_schema, values.get(name)))
        record = dataclasses.replace(record, headers=[*record.headers, *added])
        if not move:
            return record
        if schema is None:
            return side.put(record, None, {k: v for k, v in values.items() if k not in fields})
        kept = [(f.name, f.schema, values[f.name]) for f in schema.fields if f.name not in fields]
        return side.put(record, *_struct(None, kept, like=schema))

    return apply


TRANSFORMS: dict[str, Callable[[Mapping[str, str], Side], Transform]] = {
    "InsertField": insert_field, "ReplaceField": replace_field, "MaskField": mask_field, "ValueToKey": value_to_key,
    "ExtractField": extract_field, "HoistField": hoist_field, "SetSchemaMetadata": set_schema_metadata,
    "RegexRouter": regex_router, "DropHeaders": drop_headers, "InsertHeader": insert_header, "Filter": filter_all,
    "Flatten": flatten, "Cast": cast, "TimestampConverter": timestamp_converter, "TimestampRouter": timestamp_router,
    "HeaderFrom": header_from,
}
# transforms without $Key/$Value variants
_WHOLE_RECORD = {"ValueToKey", "RegexRouter", "DropHeaders", "InsertHeader", "Filter", "TimestampRouter"}


# ---- predicates -------------------------------------------------------------------------------------------

def _topic_name_matches(config: Mapping[str, str]) -> Predicate:
    try:
        pattern = re.compile(_required(config, "pattern", ""))
    except re.error as exc:
        raise ConfigException(f"Invalid value for configuration pattern: {exc}") from None
    return lambda record: pattern.fullmatch(record.topic) is not None


def _has_header_key(config: Mapping[str, str]) -> Predicate:
    name = _required(config, "name", "")
    return lambda record: any(h[0] == name for h in record.headers)


PREDICATES: dict[str, Callable[[Mapping[str, str]], Predicate]] = {
    "org.apache.kafka.connect.transforms.predicates.TopicNameMatches": _topic_name_matches,
    "org.apache.kafka.connect.transforms.predicates.HasHeaderKey": _has_header_key,
    "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone": lambda _c: lambda r: r.value is None,
}


def _transform_factory(type_name: str) -> tuple[Callable[[Mapping[str, str], Side], Transform], Side]:
    name = type_name.strip()
    simple = name[len(PKG):] if name.startswith(PKG) else name
    base, _, variant = simple.partition("$")
    factory = TRANSFORMS.get(base)
    if factory is None or (variant not in ("Key", "Value") and base not in _WHOLE_RECORD) or (
            variant and base in _WHOLE_RECORD):
        raise ConfigException(f"Invalid value {type_name} for configuration transforms: Class {type_name} could not "
                              "be found.")
    return factory, Side(variant == "Key")


def _sub(config: Mapping[str, str], prefix: str) -> dict[str, str]:
    return {k[len(prefix):]: v for k, v in config.items() if k.startswith(prefix)}


def chain(config: Mapping[str, str]) -> Transform:
    """The connector's transformation chain (identity when it has none); ConfigException names what is wrong."""
    predicates: dict[str, Predicate] = {}
    for alias in _list(config, "predicates"):
        kind = config.get(f"predicates.{alias}.type", "").strip()
        make = PREDICATES.get(kind) or PREDICATES.get(f"{PKG}predicates.{kind}")
        if make is None:
            raise ConfigException(f"Invalid value {kind or None} for configuration predicates.{alias}.type: "
                                  "Not a Predicate")
        predicates[alias] = make(_sub(config, f"predicates.{alias}."))
    steps: list[Transform] = []
    for alias in _list(config, "transforms"):
        prefix = f"transforms.{alias}."
        settings = _sub(config, prefix)
        if not settings.get("type"):
            raise ConfigException(f'Missing required configuration "{prefix}type" which has no default value.')
        factory, side = _transform_factory(settings["type"])
        transform = factory(settings, side)
        predicate_alias = settings.get("predicate", "").strip()
        if predicate_alias:
            if predicate_alias not in predicates:
                raise ConfigException(f"Invalid value {predicate_alias} for configuration {prefix}predicate: "
                                      "Predicate not found")
            steps.append(_when(transform, predicates[predicate_alias], settings.get("negate", "false") == "true"))
        else:
            steps.append(transform)

    def apply(record: ConnectRecord) -> ConnectRecord | None:
        current: ConnectRecord | None = record
        for step in steps:
            if current is None:
                return None
            current = step(current)
        return current

    return apply


def _when(transform: Transform, predicate: Predicate, negate: bool) -> Transform:
    return lambda record: transform(record) if predicate(record) != negate else record
