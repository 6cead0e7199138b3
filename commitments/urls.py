from __future__ import annotations

from django.urls import path

from commitments import api

urlpatterns = [
    path("commitments/open", api.CommitmentsOpen.as_view()),
    path("commitments/list", api.CommitmentsList.as_view()),
    path("commitments/confirm", api.CommitmentsConfirm.as_view()),
    path("commitments/dismiss", api.CommitmentsDismiss.as_view()),
    path("commitments/set-status", api.CommitmentsSetStatus.as_view()),
    path("maintenance/recover-statusless-commitments", api.RecoverStatuslessCommitments.as_view()),
]
