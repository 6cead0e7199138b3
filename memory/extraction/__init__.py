"""Extraction: text in, candidate claims, tasks and people out (SPEC §7). Reconcile decides what is stored."""
