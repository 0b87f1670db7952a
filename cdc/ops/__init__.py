"""The operations API of the daemon (issue #41): state of the sources and the operator's actions over HTTP.

- config.py: the ``api:`` config section;
- control.py: a source's operator state (paused, pending operations records) and the record itself;
- actions.py: the actions the CLI also has (skip, resync), called through the CLI's own code;
- openapi.py: the OpenAPI 3 document, the one list of routes;
- server.py: the HTTP listener, its authentication and limits.
"""
