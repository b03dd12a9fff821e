from django.urls import path

from leaderboard import views

app_name = "leaderboard"

urlpatterns = [
    path("", views.index, name="index"),
    path("leaderboard/<slug:slug>/", views.benchmark, name="benchmark"),
]
