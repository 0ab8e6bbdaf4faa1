from django.apps import AppConfig
from django.db.models.signals import post_migrate


class KeeperStateConfig(AppConfig):
    name = "keeperstate"
    verbose_name = "KeeperState"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from keeperstate.audit import signals  # noqa: F401  (connects the login and membership receivers)
        from keeperstate.ops import availability
        from keeperstate.state.maintenance import sync_state_settings

        # A new connection is one that takes writes (target_session_attrs): an outage has ended.
        connection_created.connect(availability.connected, dispatch_uid="keeperstate-database-available")

        # The triggers read their settings from a table; every migrate brings it up to date.
        post_migrate.connect(sync_state_settings, sender=self)
