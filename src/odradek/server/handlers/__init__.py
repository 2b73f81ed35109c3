"""Request handlers, one module per API family; each registers its APIs in `odradek.server.registry`.
The dispatcher imports the modules (HANDLER_MODULES in server/dispatcher.py)."""
