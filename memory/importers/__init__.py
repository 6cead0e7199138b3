"""Importers of other assistants' chat exports: each parses a file into ingestion inputs (base.ImportPlan) that
memory.services.history_import hands to the normal ingestion service."""
