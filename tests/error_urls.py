"""The site's URLconf plus views that fail on purpose, for the error page tests."""

from django.http import HttpRequest, HttpResponse
from django.urls import path

from keeperstate.urls import *  # noqa: F403 - the handlers too
from keeperstate.urls import urlpatterns as site_patterns


def boom(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("secret internals: /srv/keeperstate/settings.py SELECT password FROM auth_user")


urlpatterns = [path("boom/", boom), path("api/boom/", boom), *site_patterns]
