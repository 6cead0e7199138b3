"""Maintenance: keeping a memory clean for years (pruning, deduplication, reaping, vector upkeep). A Django
app without models; see docs/architecture.md, "Maintenance and data rights"."""
