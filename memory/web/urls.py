from __future__ import annotations

from django.urls import path

from memory.web import review, views

app_name = "ui"
urlpatterns = [
    path("", views.home, name="home"),
    path("partition", views.switch_partition, name="switch-partition"),
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
]
