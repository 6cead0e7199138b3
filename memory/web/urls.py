from __future__ import annotations

from django.urls import path

from memory.web import tokens, views

app_name = "ui"
urlpatterns = [
    path("", views.home, name="home"),
    path("partition", views.switch_partition, name="switch-partition"),
    path("tokens/", tokens.tokens, name="tokens"),
    path("tokens/<str:token_id>/rotate", tokens.rotate, name="tokens-rotate"),
    path("tokens/<str:token_id>/revoke", tokens.revoke, name="tokens-revoke"),
]
