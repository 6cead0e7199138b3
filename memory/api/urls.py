from __future__ import annotations

from django.urls import path

from memory.api import views

urlpatterns = [
    path("whoami", views.Whoami.as_view()),
    path("partitions/list", views.PartitionList.as_view()),
    path("partitions/create", views.PartitionCreate.as_view()),
    path("partitions/deactivate", views.PartitionDeactivate.as_view()),
]
