"""The web console: a separate process speaking the Kafka protocol to any cluster.

`server` is the `odradek console` command (flags, the listening socket, the access token), which runs
`supervisor`: it keeps `serving`, the process holding every librdkafka client, running, and starts it again
when it dies. In that process `app` holds the aiohttp routes and page rendering behind `gate` (Host
allowlist, login, same-origin, CSRF and read-only checks, built on `auth`: tokens, signed sessions, CSRF
tokens, host names), `cluster` every protocol read and admin request, `browse` the message browser and the
weblogs metrics reader, `sampler` the consumer-group lag history; `templates/` holds the jinja2 pages and
`static/` the stylesheet, the pages' script and the vendored uPlot charting library (MIT, its license
beside it).
"""
