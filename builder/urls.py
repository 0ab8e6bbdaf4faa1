"""Builder routes (filled by the builder issue)."""

app_name = "builder"
urlpatterns: list = []
