"""DRF API routes (filled by the API issue)."""

urlpatterns: list = []
