"""HNSW index for chunk vectors of the default model.

Vectors of several models can live in one column (each row names its model), so the index is a partial
expression index per model and dimension: searches filter on `embedding_model` and cast to the same size.
"""

from django.db import migrations

DEFAULT_MODEL = "minilm-l6-v2-int8"

CREATE = f"""
CREATE INDEX IF NOT EXISTS chunk_embedding_minilm_hnsw ON memory_chunk
USING hnsw ((embedding::vector(384)) vector_cosine_ops)
WHERE embedding_model = '{DEFAULT_MODEL}'
"""


class Migration(migrations.Migration):
    dependencies = [("memory", "0002_sources")]

    operations = [
        migrations.RunSQL(CREATE, reverse_sql="DROP INDEX IF EXISTS chunk_embedding_minilm_hnsw"),
    ]
