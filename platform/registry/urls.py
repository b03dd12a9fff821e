from django.urls import path

from registry import views

app_name = "registry"

urlpatterns = [
    path("", views.dataset_list, name="dataset-list"),
    path("<slug:slug>/", views.dataset_detail, name="dataset-detail"),
]
