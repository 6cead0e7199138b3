"""The core: partitions and tokens, sources, claims, graph, audit, search and recall (SPEC §2)."""
