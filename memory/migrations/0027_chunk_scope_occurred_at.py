"""A chunk carries its source's scope and the time of what it says: the search's keyword and vector statements
filtered and dated chunks through a join with their sources, which cost each of them about 0.2 ms of planning and
0.3 ms of execution on a conversation of 419 turns (docs/benchmarks.md, issue 18, sixteenth pass). Chunks written
before get both from their source here: an UPDATE of every chunk, once, inside the migration's transaction, so
writes to chunks wait until it ends (each row is rewritten with its vector and search text: seconds for a store of
a few thousand turns, minutes for a very large one; run it in a quiet moment)."""

from django.db import migrations, models

SCOPES = [("personal", "Personal (about the user)"), ("reference", "Reference (books, articles, external material)")]
FILLED = """
    UPDATE memory_chunk c SET scope = s.scope, occurred_at = COALESCE(c.authored_at, s.occurred_at)
    FROM memory_source s WHERE s.id = c.source_id
"""


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0026_chunk_partition_speaker"),
    ]

    operations = [
        migrations.AddField(
            model_name="chunk",
            name="scope",
            field=models.CharField(choices=SCOPES, max_length=16, null=True),
        ),
        migrations.AddField(model_name="chunk", name="occurred_at", field=models.DateTimeField(null=True)),
        migrations.RunSQL(sql=FILLED, reverse_sql=migrations.RunSQL.noop),
        migrations.AlterField(
            model_name="chunk",
            name="scope",
            field=models.CharField(choices=SCOPES, max_length=16),
        ),
        migrations.AlterField(model_name="chunk", name="occurred_at", field=models.DateTimeField()),
    ]
