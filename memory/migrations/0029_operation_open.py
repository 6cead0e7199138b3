"""The receipts queued or running, of every owner, oldest first, by an index of those alone: a worker running one job
at a time reads the next queued job's chunk texts ahead where no other process runs a job (memory.pipeline.ahead),
and the receipts table keeps every job ever run. It replaces 0028's index of the queued ones. Built concurrently:
receipts are written meanwhile."""

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("memory", "0028_operation_queued"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="operation",
            index=models.Index(
                condition=models.Q(("status__in", ["queued", "processing"])),
                fields=["status", "queued_at", "id"],
                name="operation_open",
            ),
        ),
        RemoveIndexConcurrently(model_name="operation", name="operation_queued"),
    ]
