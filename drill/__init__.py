"""The production topology drill (`make drill`, run by `.ci/run` after `make test`).

A standalone PostgreSQL with pgvector and a standalone Redis on loopback TCP, then the service's parts exactly as
docs/deploy.md tells an operator to run them (`make web` twice, `make worker` twice, `make beat` once, each a
separate process configured by DATABASE_URL, REDIS_URL and SECRET_KEY), and the checks of drill/checks.py over
HTTP and MCP. No embedded runtime anywhere.
"""
