"""The atlas's pinned claims and current context (memory.recall.atlas.atlas_sections: /context/bootstrap, the atlas
after each change of memory, the digest) each read from a partial index in their order: a few rows of many, which
took a scan of every claim each (55 and 74 ms at 100,000 claims; the sections 200 -> 41 ms in all). Built
concurrently."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("memory", "0033_claim_owner_changed"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="claim",
            index=models.Index(
                fields=["owner", "-importance", "-recorded_at"],
                condition=models.Q(pinned=True, status="active"),
                name="claim_pinned",
            ),
        ),
        AddIndexConcurrently(
            model_name="claim",
            index=models.Index(
                fields=["owner", "-stated_at", "-recorded_at"],
                condition=models.Q(kind="working_context", status="active"),
                name="claim_working_context",
            ),
        ),
    ]
