"""One action's audit rows, newest first, from an index: the activity page filtered by an action, and the latest
review decisions, walked the owner's whole trail for a rare action (a review decision among 157,000 rows: 24 ms at
100,000 claims, growing with the trail). And a partition's newest change (coordination health's last write): from
the owner's trail it was a walk of all of it for a partition without changes (2.7 s at 1.6 million). Built
concurrently."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("memory", "0035_claim_filters"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="memoryevent",
            index=models.Index(fields=["owner", "action", "-created_at"], name="memoryevent_owner_action"),
        ),
        AddIndexConcurrently(
            model_name="memoryevent",
            index=models.Index(fields=["partition", "-created_at"], name="memoryevent_partition_recent"),
        ),
    ]
