"""Who spoke, by first name, per partition: the index search walks to read everyone who spoke in the partitions it
reaches (memory.recall.anchors), one probe per person. On (owner, first name) alone the walk also met everyone of
the owner's other partitions and had to read a name's turns to learn whether any was in reach. It replaces that
index (a question's words looked up one by one use this one too). Built concurrently: chunks are written meanwhile."""

import django.db.models.functions.text
from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("memory", "0025_vectors_inline"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="chunk",
            index=models.Index(
                models.F("owner"),
                models.F("partition"),
                django.db.models.functions.text.Lower(
                    models.Func(models.F("speaker"), models.Value(" "), models.Value(1), function="split_part")
                ),
                name="chunk_partition_speaker",
            ),
        ),
        RemoveIndexConcurrently(model_name="chunk", name="chunk_owner_speaker"),
    ]
