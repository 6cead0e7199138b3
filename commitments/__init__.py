"""Tasks and their status lifecycle: open commitments, candidates, digest buckets (SPEC §5, issue: commitments)."""
