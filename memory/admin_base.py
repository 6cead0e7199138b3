"""What every admin page shares: pages that change nothing say "view only", and lists never load the heavy
columns (embeddings, search vectors, long text) of their rows or of the rows they show next to them."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils.text import capfirst

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


class ProductAdmin(admin.ModelAdmin):
    """`deferred`: columns the list and the page leave out of the query (loaded only if a page reads them)."""

    deferred: tuple[str, ...] = ()

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
