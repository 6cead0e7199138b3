"""Autovacuum analyses the memory tables after 2 % of their rows (and at least 200) changed, not 10 %: at a
million claims the default waits for 100,000 changes before the planner learns about them (issue 18). The
pipeline also analyses right after a large job (memory/services/planner_statistics.py); this is the backstop
for changes made elsewhere."""

from django.db import migrations

TABLES = ["memory_source", "memory_chunk", "memory_claim", "memory_evidence", "memory_node", "memory_alias"]
OPTIONS = "autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 200"


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0021_chunk_speaker_index"),
    ]

    operations = [
        migrations.RunSQL(
            sql=[f"ALTER TABLE {table} SET ({OPTIONS})" for table in TABLES],
            reverse_sql=[
                f"ALTER TABLE {table} RESET (autovacuum_analyze_scale_factor, autovacuum_analyze_threshold)"
                for table in TABLES
            ],
        ),
    ]
