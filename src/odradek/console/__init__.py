"""The web console: a separate process speaking the Kafka protocol to any cluster.

`server` is the `odradek console` command (flags, start-up, logging), `app` the aiohttp routes and page
rendering, `cluster` every protocol read and admin request, `browse` the message browser and the weblogs
metrics reader, `sampler` the consumer-group lag history; `templates/` holds the jinja2 pages and
`static/` the stylesheet, the pages' script and the vendored uPlot charting library (MIT, its license
beside it).
"""
