"""Indexes that are written but never read, dropped without blocking writes (memory/index_ops.py): the index of
each foreign key that leads a composite index of its table (the composite finds its rows, for reads and for the
checks of a delete), and the pattern (`LIKE`) index beside every column holding a public id (ids are compared
whole). The models say `db_index=False` for those keys; tests/memory/test_indexes.py keeps it so."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from memory.index_ops import DropForeignKeyIndexes, DropIdPatternIndexes


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("memory", "0036_memoryevent_owner_action"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="agentsession",
                    name="owner",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                migrations.AlterField(
                    model_name="alias",
                    name="node",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="aliases",
                        to="memory.node",
                    ),
                ),
                migrations.AlterField(
                    model_name="alias",
                    name="partition",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="memory.partition",
                    ),
                ),
                migrations.AlterField(
                    model_name="artifactplacement",
                    name="blob",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="placements",
                        to="memory.blob",
                    ),
                ),
                migrations.AlterField(
                    model_name="blob",
                    name="owner",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="blobs",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                migrations.AlterField(
                    model_name="chunk",
                    name="owner",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                migrations.AlterField(
                    model_name="chunk",
                    name="source",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="chunks",
                        to="memory.source",
                    ),
                ),
                migrations.AlterField(
                    model_name="claim",
                    name="owner",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="claims",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                migrations.AlterField(
                    model_name="claim",
                    name="subject",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="claims",
                        to="memory.node",
                    ),
                ),
                migrations.AlterField(
                    model_name="evidence",
                    name="claim",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="evidence",
                        to="memory.claim",
                    ),
                ),
                migrations.AlterField(
                    model_name="feedback",
                    name="owner",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="feedback",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                migrations.AlterField(
                    model_name="memoryevent",
                    name="owner",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="memory_events",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                migrations.AlterField(
                    model_name="memoryevent",
                    name="partition",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="memory.partition",
                    ),
                ),
                migrations.AlterField(
                    model_name="node",
                    name="owner",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="nodes",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                migrations.AlterField(
                    model_name="operation",
                    name="owner",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="operations",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                migrations.AlterField(
                    model_name="partition",
                    name="owner",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="partitions",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                migrations.AlterField(
                    model_name="sessionevent",
                    name="session",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="events",
                        to="memory.agentsession",
                    ),
                ),
                migrations.AlterField(
                    model_name="source",
                    name="owner",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="sources",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                migrations.AlterField(
                    model_name="source",
                    name="parent",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="children",
                        to="memory.source",
                    ),
                ),
                migrations.AlterField(
                    model_name="toolevent",
                    name="owner",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="tool_events",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            database_operations=[
                DropForeignKeyIndexes(
                    fields=[
                        ("agentsession", "owner"),
                        ("alias", "node"),
                        ("alias", "partition"),
                        ("artifactplacement", "blob"),
                        ("blob", "owner"),
                        ("chunk", "owner"),
                        ("chunk", "source"),
                        ("claim", "owner"),
                        ("claim", "subject"),
                        ("evidence", "claim"),
                        ("feedback", "owner"),
                        ("memoryevent", "owner"),
                        ("memoryevent", "partition"),
                        ("node", "owner"),
                        ("operation", "owner"),
                        ("partition", "owner"),
                        ("sessionevent", "session"),
                        ("source", "owner"),
                        ("source", "parent"),
                        ("toolevent", "owner"),
                    ]
                )
            ],
        ),
        DropIdPatternIndexes(app_label="memory"),
    ]
