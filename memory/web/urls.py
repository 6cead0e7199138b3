from __future__ import annotations

from django.urls import path

from memory.web import dashboard, views

app_name = "ui"
urlpatterns = [
    path("", dashboard.home, name="home"),
    path("partition", views.switch_partition, name="switch-partition"),
]
