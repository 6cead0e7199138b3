"""The index a node card's time is read through (memory.recall.search.node_results): a node's active claims,
most recently stated first, with their ids, so the newest of them come from the index alone. Built
concurrently: at a million claims the build takes seconds, and writes to claims go on meanwhile."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("memory", "0022_autovacuum_analyze_thresholds"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="claim",
            index=models.Index(
                condition=models.Q(("status", "active")),
                fields=["subject", "-stated_at"],
                include=("id",),
                name="claim_subject_recent",
            ),
        ),
    ]
