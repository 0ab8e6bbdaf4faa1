"""Django admin: inspect and repair organizations, workflows, executions and state.

One module per domain (accounts, users, workflows and executions, state, audit, secrets); every
tenant model's admin, Django's users included, is scoped to the organizations a staff user
administers (scoping.py, users.py), and figures read the same on every page (display.py). State
rows are written by runs; an admin may repair a value or expiry (through the store, so the same
checks apply and the trigger moves the version) or delete a row, but not add one.
"""

from django.contrib import admin

from keeperstate.admin import accounts, audit, lockout, secrets, state, users, workflows  # noqa: F401  (register the pages)

admin.site.site_header = "KeeperState administration"
admin.site.site_title = "KeeperState admin"
admin.site.index_title = "Organizations, workflows, runs and state"
# The side menu takes a quarter of a 1280 px window from every list; Home and the breadcrumbs
# lead to the same places.
admin.site.enable_nav_sidebar = False
