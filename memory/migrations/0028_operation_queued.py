"""The oldest queued receipts of every owner, by an index of the queued ones only: a worker running one job at a
time reads the next job's chunk texts ahead (memory.pipeline.ahead), and the receipts table keeps every job ever run."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('memory', '0027_chunk_scope_occurred_at'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='operation',
            index=models.Index(condition=models.Q(('status', 'queued')), fields=['queued_at', 'id'], name='operation_queued'),
        ),
    ]
