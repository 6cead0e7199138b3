"""Metric definitions and observations: series and summaries (SPEC §5, issue: metrics)."""
