"""The review desk's REST API, mounted at /api/v1/ by gagar_web/urls.py."""

from django.urls import path

from reviews.api.agreement import AgreementView
from reviews.api.bench import GraderCompareView
from reviews.api.campaigns import CampaignCancelView, CampaignDetailView, CampaignListCreateView
from reviews.api.comparisons import ComparisonDatasetView, ComparisonDetailView, ComparisonListCreateView
from reviews.api.grader_bench import GraderBenchExportView
from reviews.api.labeled import LabeledGroupExportView
from reviews.api.project_scanners import ProjectScannerListCreateView, ProjectScannerRunView
from reviews.api.scanners import ScanLabelListUploadView, ScannerListView
from reviews.api.search import SearchView

urlpatterns = [
    path("agreement/", AgreementView.as_view(), name="api-agreement"),
    path("campaigns/", CampaignListCreateView.as_view(), name="api-campaigns"),
    path("campaigns/<int:pk>/", CampaignDetailView.as_view(), name="api-campaign"),
    path("campaigns/<int:pk>/cancel/", CampaignCancelView.as_view(), name="api-campaign-cancel"),
    path("comparisons/", ComparisonListCreateView.as_view(), name="api-comparisons"),
    path("comparisons/<str:name>/", ComparisonDetailView.as_view(), name="api-comparison"),
    path("comparisons/<str:name>/dataset/", ComparisonDatasetView.as_view(), name="api-comparison-dataset"),
    path("graders/compare/", GraderCompareView.as_view(), name="api-graders-compare"),
    path("grader-bench/", GraderBenchExportView.as_view(), name="api-grader-bench"),
    path("labeled-groups/", LabeledGroupExportView.as_view(), name="api-labeled-groups"),
    path("scan-labels/", ScanLabelListUploadView.as_view(), name="api-scan-labels"),
    path("scanners/", ScannerListView.as_view(), name="api-scanners"),
    path("scanners/custom/", ProjectScannerListCreateView.as_view(), name="api-project-scanners"),
    path("scanners/custom/<str:name>/runs/", ProjectScannerRunView.as_view(), name="api-project-scanner-runs"),
    path("search/", SearchView.as_view(), name="api-search"),
]
