from __future__ import annotations

from django.urls import path

from memory.web import views

app_name = "ui"
urlpatterns = [
    path("", views.home, name="home"),
    path("partition", views.switch_partition, name="switch-partition"),
]
