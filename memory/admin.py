"""Django admin: users, partitions, tokens (secret shown once; rotate and revoke as actions) and the audit trail and
call log; what memory holds is in memory/admin_knowledge.py, the rest in memory/admin_catalogue.py. Lists never load
heavy columns (admin_base)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from memory.access import Actor, access_for_user
from memory.activity import WORDS
from memory.admin_base import ProductAdmin, ReadOnlyAdmin, vocabulary_filter
from memory.errors import ServiceError, ValidationFailed
from memory.models import (
    AccessToken,
    MemoryEvent,
    Partition,
    Scope,
    Surface,
    ToolEvent,
    User,
)
from memory.services.account_erasure import account_erase, account_inventory, partition_erase
from memory.services.partitions import partition_deactivate, partition_reactivate
from memory.services.tokens import (
    IssuedToken,
    token_issue,
    token_revoke,
    token_rotate,
    token_settings_validate,
)

admin.site.site_header = "Memory administration"
admin.site.site_title = "Memory admin"
admin.site.index_title = "Accounts and memory"


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    list_display = ("username", "external_id", "email", "is_staff", "is_active")
    search_fields = ("username", "external_id", "email")
    fieldsets = (*DjangoUserAdmin.fieldsets, ("Memory", {"fields": ("external_id",)}))  # type: ignore[misc]
    add_fieldsets = (
        (None, {"classes": ("wide",), "fields": ("username", "external_id", "email", "password1", "password2")}),
    )

    actions = ["erase_with_memory"]

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        if "external_id" in form.base_fields:
            form.base_fields["external_id"].required = False
        return form

    # A plain delete goes through the same erasure as the action: no blob file of the user stays on disk.
    def delete_model(self, request: HttpRequest, obj: User) -> None:
        account_erase(user=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        for user in queryset:
            account_erase(user=user)

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        """The erasure removes audit rows and files' originals itself, in an order that needs no permission on
        the read-only audit admin and meets no protected blob: neither blocks deleting a user."""
        deleted, model_count, _, _ = super().get_deleted_objects(objs, request)
        return deleted, model_count, set(), []

    @admin.action(description="Erase the user and all their memory", permissions=["delete"])
    def erase_with_memory(self, request: HttpRequest, queryset: QuerySet[User]) -> HttpResponse | None:
        """A confirmation page first (what each account holds); erasing happens on its POST. Not the signed-in
        admin's own account: that is `manage.py erase_user`, from outside the session it would end."""
        if request.user.pk is not None and queryset.filter(pk=request.user.pk).exists():
            self.message_user(request, "Your own account is erased with manage.py erase_user.", messages.ERROR)
            return None
        if request.POST.get("erase") == "yes":
            erased = [account_erase(user=user) for user in queryset]
            names = ", ".join(item.username for item in erased)
            self.message_user(request, f"Erased {len(erased)} account(s) and all their memory: {names}.")
            return None
        accounts = [{"user": user, "counts": account_inventory(user)} for user in queryset]
        context = {
            **self.admin_site.each_context(request), "title": "Erase the user and all their memory?",
            "accounts": accounts, "opts": self.opts, "queryset": queryset,
            "action_checkbox_name": ACTION_CHECKBOX_NAME,
        }  # fmt: skip
        return TemplateResponse(request, "admin/memory/user/erase_confirmation.html", context)


@admin.register(Partition)
class PartitionAdmin(ProductAdmin):
    list_display = ("key", "owner", "label", "is_active", "created_at")
    list_filter = ("is_active",)
    search_fields = ("key", "label", "owner__username")
    list_select_related = ("owner",)
    readonly_fields = ("id", "created_at", "deactivated_at")
    actions = ["deactivate", "reactivate"]

    @admin.action(description="Reactivate (read and written again)")
    def reactivate(self, request: HttpRequest, queryset: QuerySet[Partition]) -> None:
        self._each(request, queryset, partition_reactivate)

    @admin.action(description="Deactivate (hide from workspace reads; nothing is deleted)")
    def deactivate(self, request: HttpRequest, queryset: QuerySet[Partition]) -> None:
        self._each(request, queryset, partition_deactivate)

    # A delete, plain or as the list's action, is the partition's erasure: its content, the files no other
    # partition uses and an audit row go with it; a personal partition is emptied and kept.
    def delete_model(self, request: HttpRequest, obj: Partition) -> None:
        self._each(request, Partition.objects.filter(pk=obj.pk), partial(partition_erase, dry_run=False))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Partition]) -> None:
        self._each(request, queryset, partial(partition_erase, dry_run=False))

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        """The erasure blanks audit rows and removes files itself: the read-only audit admin and a protected
        blob do not block it."""
        deleted, model_count, _, _ = super().get_deleted_objects(objs, request)
        return deleted, model_count, set(), []

    def _each(self, request: HttpRequest, queryset: QuerySet[Partition], service: Callable[..., Any]) -> None:
        """The service on each selected partition, as the admin acting for its owner; refusals are shown."""
        for partition in queryset.select_related("owner"):
            access = access_for_user(user=partition.owner, acting=Actor.admin(request.user))  # type: ignore[arg-type]
            try:
                service(access=access, key=partition.key)
            except ServiceError as exc:
                self.message_user(request, f"{partition.key}: {exc.message}", messages.ERROR)


class AccessTokenForm(forms.ModelForm):
    scopes = forms.MultipleChoiceField(
        choices=Scope.choices, widget=forms.CheckboxSelectMultiple, initial=[Scope.READ, Scope.WRITE]
    )
    partition_keys = forms.CharField(
        required=False, help_text="Comma-separated partition keys this token may reach. Empty: all of them."
    )

    class Meta:
        model = AccessToken
        fields = (
            "owner",
            "label",
            "surface",
            "scopes",
            "partition_keys",
            "default_partition_key",
            "profile",
            "allow_query_token",
            "acts_for",
            "expires_at",
            "rate_limit_per_minute",
        )

    def clean_partition_keys(self) -> list[str]:
        return [key.strip() for key in self.cleaned_data["partition_keys"].split(",") if key.strip()]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        try:
            token_settings_validate(
                scopes=data.get("scopes", []),
                surface=data.get("surface", ""),
                profile=data.get("profile", ""),
                partition_keys=data.get("partition_keys", []),
                default_partition_key=data.get("default_partition_key", ""),
                acts_for_count=len(data.get("acts_for") or []),
                expires_at=data.get("expires_at"),
            )
        except ValidationFailed as exc:
            for problems in exc.details.values():
                for problem in problems:
                    self.add_error(None, problem)
        return data


@admin.register(AccessToken)
class AccessTokenAdmin(ProductAdmin):
    """Tokens are issued, rotated and revoked, never edited: what a secret may do is fixed when it is shown."""

    form = AccessTokenForm
    list_display = (
        "label",
        "owner",
        "prefix",
        "surface",
        "scope_list",
        "partition_list",
        "profile",
        "last_used_at",
        "state",
    )
    list_filter = ("surface", "profile")
    search_fields = ("label", "prefix", "owner__username")
    list_select_related = ("owner",)
    actions = ["rotate", "revoke"]
    filter_horizontal = ("acts_for",)

    @admin.display(description="Scopes")
    def scope_list(self, token: AccessToken) -> str:
        return ", ".join(token.scopes)

    @admin.display(description="Partitions")
    def partition_list(self, token: AccessToken) -> str:
        return ", ".join(token.partition_keys) or "all"

    @admin.display(description="State")
    def state(self, token: AccessToken) -> str:
        if token.is_revoked:
            return "revoked"
        return "expired" if token.is_expired else "active"

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # The change page is view-only; the changelist stays usable for the rotate and revoke actions.
        return obj is None and super().has_change_permission(request, obj)

    def save_model(self, request: HttpRequest, obj: AccessToken, form: Any, change: bool) -> None:
        data = form.cleaned_data
        self._issued = token_issue(
            actor=Actor.admin(request.user),  # type: ignore[arg-type]
            owner=data["owner"],
            label=data["label"],
            scopes=data["scopes"],
            surface=data["surface"],
            profile=data["profile"],
            partition_keys=data["partition_keys"],
            default_partition_key=data["default_partition_key"],
            allow_query_token=data["allow_query_token"],
            acts_for=data["acts_for"],
            expires_at=data["expires_at"],
            rate_limit_per_minute=data["rate_limit_per_minute"],
        )
        form.instance = self._issued.token

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        """token_issue already stored acts_for."""

    def response_add(self, request: HttpRequest, obj: AccessToken, post_url_continue: Any = None) -> HttpResponse:
        return self._show_secrets(request, [self._issued], "Token created")

    @admin.action(description="Rotate: issue a new secret and revoke the old one")
    def rotate(self, request: HttpRequest, queryset: QuerySet[AccessToken]) -> HttpResponse | None:
        issued: list[IssuedToken] = []
        for token in queryset.filter(revoked_at__isnull=True):
            issued.append(token_rotate(actor=Actor.admin(request.user), token=token))  # type: ignore[arg-type]
        if not issued:
            self.message_user(request, "No active token selected.", messages.WARNING)
            return None
        return self._show_secrets(request, issued, "Tokens rotated")

    @admin.action(description="Revoke: refuse the next request made with it")
    def revoke(self, request: HttpRequest, queryset: QuerySet[AccessToken]) -> None:
        for token in queryset:
            token_revoke(actor=Actor.admin(request.user), token=token)  # type: ignore[arg-type]
        self.message_user(request, f"Revoked {queryset.count()} token(s).", messages.SUCCESS)

    def _show_secrets(self, request: HttpRequest, issued: list[IssuedToken], title: str) -> HttpResponse:
        base = request.build_absolute_uri("/").rstrip("/")  # for the ready-to-paste MCP configurations
        context = {
            **self.admin_site.each_context(request), "title": title, "issued": issued, "opts": self.opts, "base": base,
        }  # fmt: skip
        response = TemplateResponse(request, "admin/memory/accesstoken/secrets.html", context)
        response["Cache-Control"] = "no-store"
        return response


def _tool_names() -> list[str]:
    """Every tool a call can name: the REST endpoints' (memory.api) and the MCP tools' (mcp_bridge.catalog)."""
    from mcp_bridge.catalog import all_tools
    from memory.api.base import endpoint_tools

    return endpoint_tools() + [spec.name for spec in all_tools()]


@admin.register(MemoryEvent)
class MemoryEventAdmin(ReadOnlyAdmin):
    list_display = (
        "created_at", "owner", "action", "target_type", "target_id", "actor_kind", "surface", "actor_token",
    )  # fmt: skip
    list_filter = (vocabulary_filter("action", "action", lambda: WORDS), "actor_kind", "surface")
    exact_search = ("target_id", "owner__username")  # memoryevent_owner_target, skipping over owners
    search_help_text = "A target's id (claim_…, src_…) or an owner's username, exactly."
    list_select_related = ("owner", "actor_token")
    deferred = ("before", "after")
    ordering = ("-id",)  # newest first, near enough, by the primary key's index: ids are ULIDs made as rows are written


@admin.register(ToolEvent)
class ToolEventAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "surface", "tool", "owner", "status_code", "error_code", "duration_ms")
    list_filter = (
        vocabulary_filter("surface", "surface", lambda: [Surface.REST, Surface.MCP]),
        "outcome",
        vocabulary_filter("tool", "tool", _tool_names),
    )
    list_select_related = ("owner",)
    ordering = ("-id",)  # newest first, near enough, by the primary key's index (a sequence, as batches are written)

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        days = settings.TOOL_EVENTS_KEEP_DAYS
        kept = f"Calls are kept for {days} days, then deleted" if days else "Every call is kept"
        return super().changelist_view(
            request, {"subtitle": f"{kept} (TOOL_EVENTS_KEEP_DAYS).", **(extra_context or {})}
        )


from memory import admin_catalogue, admin_knowledge  # noqa: E402, F401  (register the remaining models)
