"""WSGI entry point: Django's application, with the path's raw bytes judged first
(keeperstate.core.paths: Django would re-encode bytes that are not UTF-8 and drop the original)."""

import os

from django.core.wsgi import get_wsgi_application

from keeperstate.core.paths import MarkPathBytes

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "keeperstate.settings")
application = MarkPathBytes(get_wsgi_application())
