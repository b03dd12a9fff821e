"""The submission form, a submission's page with its live job status, and the public queue."""

from django.urls import path

from submissions import views

app_name = "submissions"

urlpatterns = [
    path("submit/", views.new_submission, name="new"),
    path("submit/hub.json", views.hub_card, name="hub-card"),
    path("submissions/<int:pk>/", views.detail, name="detail"),
    path("submissions/<int:pk>/status.json", views.status, name="status"),
    path("submissions/<int:pk>/cancel", views.cancel, name="cancel"),
    path("submissions/<int:pk>/publish", views.publish, name="publish"),
    path("submissions/<int:pk>/hub-token/forget", views.forget_hub_token, name="forget-hub-token"),
    path("queue/", views.queue, name="queue"),
]
