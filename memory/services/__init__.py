"""Writes. Each public function is keyword-only, typed, atomic, and records a MemoryEvent."""
