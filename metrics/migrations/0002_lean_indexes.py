"""The metrics' share of memory 0037: a foreign key's index that a composite index leads, and the pattern
(`LIKE`) indexes of public-id columns, dropped without blocking writes (memory/index_ops.py)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from memory.index_ops import DropForeignKeyIndexes, DropIdPatternIndexes


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("metrics", "0001_metrics"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="metricdefinition",
                    name="owner",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="metrics",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                migrations.AlterField(
                    model_name="observation",
                    name="definition",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="observations",
                        to="metrics.metricdefinition",
                    ),
                ),
            ],
            database_operations=[
                DropForeignKeyIndexes(fields=[("metricdefinition", "owner"), ("observation", "definition")])
            ],
        ),
        DropIdPatternIndexes(app_label="metrics"),
    ]
