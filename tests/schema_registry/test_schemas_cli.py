"""`odradek schemas`: the schema registry's command-line client against a real registry (the broker's own,
`schema_registry_api`, and a separate one with TLS and basic auth): each command's output and exit code, and
every failure as one line on stderr with exit code 1 (an unknown subject named, an invalid schema with the
registry's 42201 message, an unreachable registry, bad flags)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.cli.schemas import main
from tests.harness import BrokerProcess, free_port, run_cli
from tests.schema_registry.helpers import Registry, RestClient, in_broker_config, in_broker_registry

PORT = free_port()
V1 = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}
V2 = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"},
                                                    {"name": "note", "type": "string", "default": ""}]}
BREAKING = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]}


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    return in_broker_config(PORT)


@pytest.fixture(scope="module")
def registry(broker: BrokerProcess) -> RestClient:
    return in_broker_registry(PORT)


def schemas(capsys: pytest.CaptureFixture[str], *args: str, url: str | None = None) -> tuple[int, str, str]:
    """`odradek schemas ARGS` in this process (the command's own main): exit code, stdout, stderr."""
    capsys.readouterr()
    code = main([*args, "--schema-registry-url", url or f"http://127.0.0.1:{PORT}"])
    out, err = capsys.readouterr()
    return code, out, err


def schema_file(tmp_path: Path, doc: object, name: str = "schema.avsc") -> str:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(path)


def test_register_list_get_check_config_delete(registry: RestClient, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = schemas(capsys, "register", "orders-value", "--schema-file", schema_file(tmp_path, V1))
    first = int(out.rsplit(":", 1)[1])
    assert code == 0 and out == f"Successfully registered schema with ID: {first}\n"
    code, out, _ = schemas(capsys, "register", "orders-value", "--schema-file", schema_file(tmp_path, V2, "v2.avsc"))
    second = int(out.rsplit(":", 1)[1])
    assert code == 0 and second != first
    assert registry.call("GET", "/subjects/orders-value/versions") == (200, [1, 2])

    assert "orders-value\n" in schemas(capsys, "list")[1]
    assert "orders-value\t1,2\n" in schemas(capsys, "list", "--versions", "--prefix", "orders")[1]
    assert schemas(capsys, "list", "--prefix", "nothing-")[1] == ""

    code, out, _ = schemas(capsys, "get", "orders-value")
    assert code == 0 and out.startswith(f"Subject: orders-value\nVersion: 2\nID: {second}\nType: AVRO\nSchema:\n{{\n")
    assert json.loads(out.split("Schema:\n", 1)[1]) == V2
    code, out, _ = schemas(capsys, "get", "orders-value", "--version", "1", "--schema-only")
    assert code == 0 and json.loads(out) == V1

    code, out, _ = schemas(capsys, "check", "orders-value", "--schema-file", schema_file(tmp_path, V2, "v2.avsc"))
    assert (code, out) == (0, "Compatible with version latest of subject 'orders-value'\n")
    code, out, _ = schemas(capsys, "check", "orders-value", "--schema-file", schema_file(tmp_path, BREAKING, "b.avsc"),
                           "--version", "1")
    assert code == 1 and out.startswith("Incompatible with version 1 of subject 'orders-value':\n  "), out
    assert "TYPE_MISMATCH" in out  # the registry's reason
    code, out, _ = schemas(capsys, "check", "orders-value", "--version", "all",
                           "--schema-file", schema_file(tmp_path, BREAKING, "b.avsc"))
    assert code == 1 and "every version the compatibility level names" in out

    assert schemas(capsys, "config")[1] == "Compatibility level of global: BACKWARD\n"
    assert schemas(capsys, "config", "orders-value")[1] == \
        "Compatibility level of subject 'orders-value': BACKWARD (the global level)\n"
    assert schemas(capsys, "config", "orders-value", "--level", "full")[1] == \
        "Compatibility level of subject 'orders-value' set to FULL\n"
    assert schemas(capsys, "config", "orders-value")[1] == \
        "Compatibility level of subject 'orders-value': FULL (the subject's own)\n"
    assert schemas(capsys, "config", "orders-value", "--delete")[0] == 0
    assert registry.call("GET", "/config/orders-value")[1]["error_code"] == 40408

    assert schemas(capsys, "delete", "orders-value", "--version", "1")[1] == \
        "Deleted version(s) 1 of subject 'orders-value'\n"
    assert "orders-value\t1,2\n" in schemas(capsys, "list", "--versions", "--deleted")[1]
    assert schemas(capsys, "delete", "orders-value")[1] == "Deleted version(s) 2 of subject 'orders-value'\n"
    assert schemas(capsys, "delete", "orders-value", "--permanent")[1] == \
        "Permanently deleted version(s) 1, 2 of subject 'orders-value'\n"
    assert registry.call("GET", "/subjects?deleted=true")[1].count("orders-value") == 0


def test_references(registry: RestClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    address = {"type": "record", "name": "Address", "namespace": "shop", "fields": [{"name": "city", "type": "string"}]}
    assert schemas(capsys, "register", "address-value", "--schema-file", schema_file(tmp_path, address))[0] == 0
    customer = {"type": "record", "name": "Customer", "namespace": "shop",
                "fields": [{"name": "home", "type": "shop.Address"}]}
    code, out, err = schemas(capsys, "register", "customer-value", "--schema-file", schema_file(tmp_path, customer, "c"),
                             "--reference", "shop.Address=address-value:1")
    assert code == 0, err
    code, out, _ = schemas(capsys, "get", "customer-value")
    assert "References: shop.Address=address-value:1\n" in out
    refs = tmp_path / "refs.json"  # Confluent CLI's --references file
    refs.write_text(json.dumps([{"name": "shop.Address", "subject": "address-value", "version": 1}]))
    assert schemas(capsys, "check", "customer-value", "--schema-file", str(tmp_path / "c"),
                   "--references", str(refs))[0] == 0
    # a subject name is quoted into the path whatever it holds
    odd = "team/a b?c#d%2F-value"
    assert schemas(capsys, "register", odd, "--schema-file", schema_file(tmp_path, address))[0] == 0
    assert schemas(capsys, "get", odd)[1].startswith(f"Subject: {odd}\nVersion: 1\n")
    assert f"{odd}\t1\n" in schemas(capsys, "list", "--versions", "--prefix", "team/")[1]
    code, _, err = schemas(capsys, "register", "orphan-value", "--schema-file", str(tmp_path / "c"))
    assert code == 1 and err.count("\n") == 1 and "(42201)" in err, err  # Address unknown without the reference


def test_errors_are_one_line(registry: RestClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = schemas(capsys, "get", "no-such-subject")
    assert (code, out, err) == (1, "", "Error: Subject 'no-such-subject' not found. (40401)\n")
    code, _, err = schemas(capsys, "register", "bad-value", "--schema-file", schema_file(tmp_path, '{"type": "nope"'))
    assert code == 1 and err.startswith("Error: Invalid schema") and err.endswith("(42201)\n") and err.count("\n") == 1
    code, _, err = schemas(capsys, "check", "no-such-subject", "--schema-file", schema_file(tmp_path, V1),
                           "--version", "1")
    assert code == 1 and err == "Error: Subject 'no-such-subject' not found. (40401)\n"
    # as Confluent's: `latest` of a subject without versions accepts anything
    assert schemas(capsys, "check", "no-such-subject", "--schema-file", schema_file(tmp_path, V1))[0] == 0
    gone = free_port()
    code, _, err = schemas(capsys, "list", url=f"http://127.0.0.1:{gone}")
    assert code == 1 and err.startswith(f"Error: Schema registry unreachable at http://127.0.0.1:{gone}: ") \
        and err.count("\n") == 1, err
    for args, message in ((["get", "x", "--version", "two"], "--version expects a version number or latest"),
                          (["register", "x"], 'Missing required argument "[schema-file]"'),
                          (["list", "--bogus"], "--bogus is not a recognized option"),
                          (["config", "--level", "SOMETIMES"], "invalid choice: 'SOMETIMES'"),
                          (["register", "x", "--schema-file", str(tmp_path / "missing")], "cannot read"),
                          (["list", "--timeout", "soon"], "--timeout expects an integer"),
                          (["get", "x", "--schema-file", "f"], "--schema-file is not a recognized option"),
                          (["register", "x", "--schema-file", schema_file(tmp_path, V1), "--reference", "nonsense"],
                           "--reference expects NAME=SUBJECT:VERSION")):
        code, out, err = schemas(capsys, *args)
        assert code == 1 and out == "" and err.count("\n") == 1 and message in err, (args, err)
    code, _, err = schemas(capsys, "list", url="ftp://127.0.0.1:1")
    assert code == 1 and "invalid schema registry URL" in err


def test_the_command(registry: RestClient, capsys: pytest.CaptureFixture[str]) -> None:
    """The real `odradek schemas` (its failure and exit code), and help for the tool and each command."""
    done = run_cli("schemas", "get", "nope", "--schema-registry-url", f"http://127.0.0.1:{PORT}")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", "Error: Subject 'nope' not found. (40401)\n")
    assert main(["--help"]) == 0
    top = capsys.readouterr().out
    assert all(c in top for c in ("list", "get", "register", "check", "config", "delete")), top
    for command in ("list", "get", "register", "check", "config", "delete"):
        assert main([command, "--help"]) == 0 and "--schema-registry-url" in capsys.readouterr().out
    assert main([]) == 1 and capsys.readouterr().err == 'Error: Missing required argument "[COMMAND]"\n'


@pytest.fixture(scope="module")
def secured(broker: BrokerProcess, tmp_path_factory: pytest.TempPathFactory,
            pem_pki: tuple[Path, Path]) -> Iterator[Registry]:
    _ca, keystore = pem_pki
    root = tmp_path_factory.mktemp("secured")
    (root / "users.properties").write_text("admin: secret,admin\n")
    (root / "jaas.conf").write_text('SchemaRegistry-Props {\n  org.eclipse.jetty.jaas.spi.PropertyFileLoginModule '
                                    f'required\n  file="{root / "users.properties"}";\n}};\n')
    node = Registry(root / "node", broker, {
        "authentication.method": "BASIC", "authentication.realm": "SchemaRegistry-Props",
        "authentication.roles": "admin", "authentication.jaas.file": str(root / "jaas.conf"),
        "ssl.keystore.location": str(keystore), "ssl.keystore.type": "PEM",
        "schema.registry.group.id": "sr-cli-secured", "kafkastore.topic": "_schemas_cli_secured"},
                    scheme="https").start()
    yield node
    node.stop()


def test_basic_auth_and_tls(secured: Registry, pem_pki: tuple[Path, Path], tmp_path: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    ca = str(pem_pki[0])
    code, out, err = schemas(capsys, "list", "--user", "admin:secret", "--ca-file", ca, url=secured.url)
    assert (code, out, err) == (0, "", "")
    code, _, err = schemas(capsys, "list", "--user", "admin:wrong", "--ca-file", ca, url=secured.url)
    assert (code, err) == (1, "Error: Unauthorized (401)\n")
    code, _, err = schemas(capsys, "list", "--user", "admin:secret", url=secured.url)  # the CA not trusted
    assert code == 1 and "CERTIFICATE_VERIFY_FAILED" in err and err.count("\n") == 1
    props = tmp_path / "client.properties"  # the password kept out of the process list
    props.write_text(f"schema.registry.url={secured.url}\nbasic.auth.credentials.source=USER_INFO\n"
                     f"basic.auth.user.info=admin:secret\nschema.registry.ssl.truststore.location={ca}\n")
    capsys.readouterr()
    assert main(["config", "--command-config", str(props)]) == 0
    assert capsys.readouterr().out == "Compatibility level of global: BACKWARD\n"
