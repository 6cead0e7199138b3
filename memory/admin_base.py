"""What every admin page shares: pages that change nothing say "view only", and lists never load the heavy
columns (embeddings, search vectors, long text) of their rows or of the rows they show next to them.

Lists of the large tables (claims, the audit trail, the call log) stay bounded at millions of rows: their counts
come from PostgreSQL's estimates where counting would read too many rows (`EstimatingPaginator`), no filtered list
counts the whole table beside its matches, filters offer no per-choice counts ("Show counts"), and
`vocabulary_filter` offers a column's known values instead of a DISTINCT over every row."""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Iterable
from functools import cached_property, reduce
from typing import Any

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.core.paginator import Paginator
from django.db import OperationalError, connection, transaction
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils.text import capfirst
from psycopg.errors import QueryCanceled

from memory.models.search import words_of

# The columns a list never needs, per model, for the model itself and for a related row shown beside it.
HEAVY = {
    "claim": ("embedding", "search_vector", "meta", "value", "object_value", "reason"),
    "node": ("embedding", "search_vector", "summary", "attributes"),
    "source": ("content", "markdown", "segments", "source_context", "participants"),
    "chunk": ("text", "embedding", "context", "search_vector"),
    "agentsession": ("meta",),
    "metricdefinition": ("embedding", "description"),
}


def heavy(model: str, through: str = "") -> tuple[str, ...]:
    """The heavy columns of `model`, reached through the relation `through` ("" for the model itself)."""
    return tuple(f"{through}__{name}" if through else name for name in HEAVY[model])


# The related rows an exact search looks through (a username names one user).
MATCHED_RELATED = 100
# Past this many rows (by the planner's estimate) a list of the table counts from estimates: the whole table's at
# once, a filtered list's when counting its matches takes longer than COUNT_BUDGET_MS.
ESTIMATED_FROM = 100_000
COUNT_BUDGET_MS = 50
LEAST_ESTIMATE = admin.ModelAdmin.list_max_show_all + 1


class EstimatingPaginator(Paginator):
    """Exact counts, except on a table of more than ESTIMATED_FROM rows, where a COUNT(*) reads every row it counts
    on every page (~100 ms for a few million, and as much for a filter no index serves): the whole table counts as
    its `reltuples` (kept by ANALYZE and autovacuum), and a filtered list exactly if that takes at most
    COUNT_BUDGET_MS, else as the planner estimates its rows."""

    @cached_property
    def count(self) -> int:
        queryset = self.object_list
        if not isinstance(queryset, QuerySet):
            return super().count
        with connection.cursor() as cursor:
            cursor.execute("SELECT reltuples::bigint, current_setting('statement_timeout') FROM pg_class "
                           "WHERE oid = %s::regclass", [queryset.model._meta.db_table])  # fmt: skip
            rows, previous = cursor.fetchone()
        if rows < ESTIMATED_FROM:
            return super().count
        if not queryset.query.where:
            return int(rows)
        try:
            with transaction.atomic(), connection.cursor() as cursor:  # a savepoint inside a caller's transaction
                cursor.execute("SELECT set_config('statement_timeout', %s, true)", [str(COUNT_BUDGET_MS)])
                counted = queryset.count()
                cursor.execute("SELECT set_config('statement_timeout', %s, true)", [previous])  # as it was
                return counted
        except OperationalError as exc:
            if not isinstance(exc.__cause__, QueryCanceled):
                raise  # a lost connection or a lock timeout is not a count to estimate
        # The budget ran out, so the list is long: never fewer than one page more than "Show all" lists at once (an
        # estimate below that would have the admin read every match into one page).
        estimate = json.loads(queryset.order_by().explain(format="json"))[0]["Plan"]["Plan Rows"]
        return max(int(estimate), LEAST_ESTIMATE)


BLANK_CHOICE = "(blank)"  # a vocabulary filter's choice of the rows whose column is blank, where it offers them


def vocabulary_filter(
    field: str, title: str, values: Callable[[], Iterable[str]], *, blank: str = ""
) -> type[admin.SimpleListFilter]:
    """A list filter on `field` offering `values()` (the column's vocabulary, known to the code) rather than
    Django's DISTINCT over the table, which reads every row on each page of the list; and, named `blank`, the rows
    whose column is blank, where `values()` holds "" (rows of it exist)."""

    class VocabularyFilter(admin.SimpleListFilter):
        parameter_name = field

        def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
            found = set(values())
            if not blank:
                return [(value, value) for value in sorted(found - {""})]
            offered = [(value, value) for value in sorted(found - {"", BLANK_CHOICE})]
            return [*offered, (BLANK_CHOICE, blank)] if "" in found else offered

        def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
            value = self.value()
            offered = {choice for choice, _ in self.lookup_choices}  # lookups(), made once as the filter was
            if value and value not in offered:  # the admin's own answer to a hand-edited filter: ?e=1
                raise IncorrectLookupParameters(f"{field}: not one of the values offered")
            if not value:
                return queryset
            return queryset.filter(**{field: "" if blank and value == BLANK_CHOICE else value})

    VocabularyFilter.title = title
    return VocabularyFilter


class ProductAdmin(admin.ModelAdmin):
    """`deferred`: columns the list and the page leave out of the query (loaded only if a page reads them).
    Searches through an index, where Django's compares every row's text: `exact_search`, rows whose column equals
    the term (`owner__username`: rows of the user of that name); `words_search`, rows whose search vector (a
    `searchable` column) holds the term's words, as the product's text filters read them (`words_of`)."""

    deferred: tuple[str, ...] = ()
    exact_search: tuple[str, ...] = ()
    words_search = ""
    paginator = EstimatingPaginator
    show_full_result_count = False  # a second count, of the whole table, beside every filtered list
    # "Show counts" counts every choice of every filter over the table: 5.6 s for the call log at 300,000 calls.
    show_facets = admin.ShowFacets.NEVER

    def get_search_fields(self, request: HttpRequest) -> list[str] | tuple[str, ...]:
        indexed = (*self.exact_search, *filter(None, [self.words_search]))
        return indexed or super().get_search_fields(request)  # the box is shown; the search is get_search_results'

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        term = search_term.strip()
        if not (self.exact_search or self.words_search) or not term:
            return super().get_search_results(request, queryset, search_term)
        if self.words_search:
            return queryset.filter(**{self.words_search: words_of(term)}), False
        return queryset.filter(reduce(operator.or_, (self._equal(path, term) for path in self.exact_search))), False

    def _equal(self, path: str, term: str) -> Q:
        """`path` equals `term`; through a relation, as the ids of the related rows that match (looked up first, so
        each condition is an index scan the planner can OR, not a join)."""
        relation, _, field = path.partition("__")
        if not field:
            return Q(**{path: term})
        related = self.model._meta.get_field(relation).related_model
        ids = list(related._default_manager.filter(**{field: term}).values_list("pk", flat=True)[:MATCHED_RELATED])
        return Q(**{f"{relation}__in": ids})

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request)
        return queryset.defer(*self.deferred) if self.deferred else queryset

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        if not self.has_change_permission(request):
            extra_context = {
                "title": f"{capfirst(self.opts.verbose_name_plural)} (view only)",
                **(extra_context or {}),
            }
        return super().changelist_view(request, extra_context)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if not self.has_change_permission(request, self.get_object(request, object_id)):
            extra_context = {
                "title": f"{capfirst(self.opts.verbose_name)} (view only)",
                **(extra_context or {}),
            }
        return super().change_view(request, object_id, form_url, extra_context)


class ReadOnlyAdmin(ProductAdmin):
    """A record kept by the system: listed and shown, never added, changed or deleted by hand."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
