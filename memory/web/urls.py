from __future__ import annotations

from django.urls import path

from memory.web import activity, claims, dashboard, review, search, sources, tokens, views

app_name = "ui"
urlpatterns = [
    path("", dashboard.home, name="home"),
    path("partition", views.switch_partition, name="switch-partition"),
    path("search", search.search_page, name="search"),
    path("claims/", claims.claim_list, name="claims-list"),
    path("claims/<str:claim_id>/", claims.claim_detail, name="claims-detail"),
    path("claims/<str:claim_id>/correct", claims.claim_correct, name="claims-correct"),
    path("claims/<str:claim_id>/erase", claims.claim_erase, name="claims-erase"),
    path("claims/<str:claim_id>/<str:action>", claims.claim_action, name="claims-action"),
    path("review/", review.queue, name="review"),
    path("review/suggestions/<str:object_id>/accept", review.accept, name="review-accept"),
    path("review/suggestions/<str:object_id>/keep-old", review.keep_old, name="review-keep-old"),
    path("review/suggestions/<str:object_id>/keep-both", review.keep_both, name="review-keep-both"),
    path("review/quarantine/<str:object_id>/confirm", review.quarantine_confirm, name="review-quarantine-confirm"),
    path("review/quarantine/<str:object_id>/erase", review.quarantine_erase, name="review-quarantine-erase"),
    path("review/tasks/<str:object_id>/confirm", review.task_confirm, name="review-task-confirm"),
    path("review/tasks/<str:object_id>/dismiss", review.task_dismiss, name="review-task-dismiss"),
    path("review/metrics/<str:object_id>/keep", review.metric_keep_view, name="review-metric-keep"),
    path("review/metrics/<str:object_id>/merge", review.metric_merge_view, name="review-metric-merge"),
    path("tokens/", tokens.tokens, name="tokens"),
    path("tokens/<str:token_id>/rotate", tokens.rotate, name="tokens-rotate"),
    path("tokens/<str:token_id>/revoke", tokens.revoke, name="tokens-revoke"),
    path("sources/", sources.source_list, name="sources-list"),
    path("sources/upload/", sources.source_upload, name="sources-upload"),
    path("sources/<str:source_id>/", sources.source_detail, name="sources-detail"),
    path("sources/<str:source_id>/original", sources.source_original, name="sources-original"),
    path("sources/<str:source_id>/retry", sources.source_retry, name="sources-retry"),
    path("sources/<str:source_id>/delete", sources.source_delete, name="sources-delete"),
    path("activity/", activity.activity, name="activity"),
]
