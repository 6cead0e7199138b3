"""The index a job reads a conversation's unread turns through (memory.pipeline.steps.Job.unread_sources): the
live messages not extracted yet, in order. Without it a job of one new turn read every turn of the conversation
(at 3,000 turns 310-400 ms a job against 40-60 at 10: bench/long_conversation.py). Built concurrently: writes to
sources go on meanwhile."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("memory", "0023_claim_subject_recent"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="source",
            index=models.Index(
                condition=models.Q(("extracted_at__isnull", True), ("tombstoned_at__isnull", True)),
                fields=["parent", "ordinal"],
                name="source_children_unread",
            ),
        ),
    ]
