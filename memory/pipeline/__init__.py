"""The processing pipeline: ordered steps over one Operation (SPEC §7)."""
