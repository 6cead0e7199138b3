"""A row's vector stays in the row. PostgreSQL moves a value out of a row longer than about 2 kB into the
table's TOAST table, and pgvector's `vector` is stored EXTERNAL: a chunk of a turn (1.5 kB of vector, a
tsvector of the turn and its context, the text) is about 3.2 kB, so 417 of a conversation's 420 chunks kept
their vector apart, and every search read it back through the TOAST index, row by row, in both legs (the vector
leg's distance, the keyword leg's ts_rank on the tsvector left compressed). Rows up to a page's 8 kB now stay
whole, and the vector is the last value moved out of a larger one. Search on a conversation of 419 turns: vector
statement 3.5-4.3 -> 2.2-3.0 ms, keyword statement 3.1-4.0 -> 2.2-2.9 ms (docs/benchmarks.md, issue 18, fourteenth
pass).

Rows written before keep their layout until rewritten (VACUUM FULL, or an update of the row)."""

from django.db import migrations

TABLES = ["memory_chunk", "memory_claim", "memory_node"]
ROW_TARGET = 8160  # the largest toast_tuple_target PostgreSQL accepts with 8 kB pages


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0024_source_children_unread"),
    ]

    operations = [
        migrations.RunSQL(
            sql=[
                statement
                for table in TABLES
                for statement in (
                    f"ALTER TABLE {table} SET (toast_tuple_target = {ROW_TARGET})",
                    f"ALTER TABLE {table} ALTER COLUMN embedding SET STORAGE MAIN",
                )
            ],
            reverse_sql=[
                statement
                for table in TABLES
                for statement in (
                    f"ALTER TABLE {table} RESET (toast_tuple_target)",
                    f"ALTER TABLE {table} ALTER COLUMN embedding SET STORAGE EXTERNAL",
                )
            ],
        ),
    ]
