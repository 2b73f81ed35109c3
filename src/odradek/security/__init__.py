"""Security outside the listeners: how our own clients meet a secured listener (`client_config.py`), and
authorization: Kafka's ACL model (`acl.py`), its store in the metadata store (`acl_store.py`) and the
authorizer that decides each request's actions (`authorizer.py`). Listener security (TLS, SASL) lives in
`server/` (`security.py`, `tls.py`, `sasl.py`)."""
