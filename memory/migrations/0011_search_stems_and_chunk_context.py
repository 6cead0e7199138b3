"""Keyword search indexes each text as written and as English stems, and chunks get a searchable context.
PostgreSQL cannot change a generated column's expression, so each search_vector is dropped and added again
(with its GIN index); the values are computed from the stored text, so nothing is lost."""

import django.contrib.postgres.indexes
import django.contrib.postgres.search
from django.db import migrations, models

import memory.models.search


def _vector(*fields):
    return models.GeneratedField(
        db_persist=True,
        expression=memory.models.search.searchable(*fields),
        output_field=django.contrib.postgres.search.SearchVectorField(),
    )


def _rebuild(model_name, index_name, *fields):
    return [
        migrations.RemoveIndex(model_name=model_name, name=index_name),
        migrations.RemoveField(model_name=model_name, name="search_vector"),
        migrations.AddField(model_name=model_name, name="search_vector", field=_vector(*fields)),
        migrations.AddIndex(
            model_name=model_name,
            index=django.contrib.postgres.indexes.GinIndex(fields=["search_vector"], name=index_name),
        ),
    ]


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0010_claim_kind_reading"),
    ]

    operations = [
        migrations.AddField(
            model_name="chunk",
            name="context",
            field=models.TextField(
                blank=True,
                default="",
                help_text="Also searchable: the speaker and the turns before a message, a title.",
            ),
        ),
        *_rebuild("chunk", "chunk_search_vector", "text", "context"),
        *_rebuild("claim", "claim_search_vector", "statement"),
        *_rebuild("node", "node_search_vector", "label", "summary"),
    ]
