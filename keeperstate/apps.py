from django.apps import AppConfig


class KeeperStateConfig(AppConfig):
    name = "keeperstate"
    verbose_name = "KeeperState"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from keeperstate import audit  # noqa: F401  (connects the login and membership receivers)
