from __future__ import annotations

from django.urls import path

from memory.web import claims, search, views

app_name = "ui"
urlpatterns = [
    path("", views.home, name="home"),
    path("partition", views.switch_partition, name="switch-partition"),
    path("search", search.search_page, name="search"),
    path("claims/", claims.claim_list, name="claims-list"),
    path("claims/<str:claim_id>/", claims.claim_detail, name="claims-detail"),
    path("claims/<str:claim_id>/correct", claims.claim_correct, name="claims-correct"),
    path("claims/<str:claim_id>/erase", claims.claim_erase, name="claims-erase"),
    path("claims/<str:claim_id>/<str:action>", claims.claim_action, name="claims-action"),
]
