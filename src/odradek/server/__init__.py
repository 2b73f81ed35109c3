"""The broker process: network server, request handlers, delayed operations, start-up wiring."""
