"""Adversarial tests: what a hostile client, an unprivileged principal or a page in the operator's browser
can make the broker or the console do. Each test reproduces a finding of issue #25; short schedules run in
CI, longer ones behind --run-slow."""
