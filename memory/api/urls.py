from __future__ import annotations

from django.urls import path

from memory.api import claims, nodes, sources, views

urlpatterns = [
    path("whoami", views.Whoami.as_view()),
    path("partitions/list", views.PartitionList.as_view()),
    path("partitions/create", views.PartitionCreate.as_view()),
    path("partitions/deactivate", views.PartitionDeactivate.as_view()),
    path("ingest/conversation", sources.IngestConversation.as_view()),
    path("ingest/document", sources.IngestDocument.as_view()),
    path("ingest/transcript", sources.IngestTranscript.as_view()),
    path("ingest/file", sources.IngestFile.as_view()),
    path("source/get", sources.SourceGet.as_view()),
    path("source/list", sources.SourceList.as_view()),
    path("source/delete", sources.SourceDelete.as_view()),
    path("source/processing/get", sources.SourceProcessingGet.as_view()),
    path("source/processing/retry", sources.SourceProcessingRetry.as_view()),
    path("claim/list", claims.ClaimList.as_view()),
    path("claim/get", claims.ClaimGet.as_view()),
    path("claim/history", claims.ClaimHistory.as_view()),
    path("claim/correct", claims.ClaimCorrect.as_view()),
    path("claim/pin", claims.ClaimPin.as_view()),
    path("claim/unpin", claims.ClaimUnpin.as_view()),
    path("claim/expire", claims.ClaimExpire.as_view()),
    path("claim/retract", claims.ClaimRetract.as_view()),
    path("claim/delete", claims.ClaimDelete.as_view()),
    path("node/list", nodes.NodeList.as_view()),
    path("node/get", nodes.NodeGet.as_view()),
    path("node/neighborhood", nodes.NodeNeighborhood.as_view()),
    path("node/sources", nodes.NodeSources.as_view()),
    path("node/update", nodes.NodeUpdate.as_view()),
    path("node/delete", nodes.NodeDelete.as_view()),
    path("node/merge", nodes.NodeMerge.as_view()),
    path("alias/add", nodes.AliasAdd.as_view()),
    path("alias/remove", nodes.AliasRemove.as_view()),
    path("artifact", sources.ArtifactPut.as_view()),
    path("artifact/list", sources.ArtifactList.as_view()),
    path("artifact/<str:sha256>", sources.ArtifactGet.as_view()),
]
