"""Defences that hold for every way in: who the client is, login lockout, API throttles,
response headers. See README.md, "Security"."""
