"""A WSGI app with no Django and no database, for gunicorn in test_server_header.py: the Server
header is gunicorn's, whatever the app answers. Kept apart from the test module, which imports the
project (gunicorn's worker imports this module without Django set up)."""


def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok"]
