from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The demo: its organization, user and workflows (seeded by ``manage.py serve``), and the
    block feed and alert sink its monitor calls. Installed only where KEEPERSTATE_DEMO is on
    (``serve`` turns it on unless ``--no-demo``); a deployment without it has none of this."""

    name = "keeperstate.demo"
    label = "demo"
    verbose_name = "KeeperState demo"
    default_auto_field = "django.db.models.BigAutoField"

    def seed_for_serve(self, base_url: str, *, embedded: bool) -> list[str]:
        """What `manage.py serve` asks of the demo: seed it and name it in the banner. Reached
        through the app registry, so serve imports nothing of an app that may not be installed."""
        from keeperstate.demo.seeding import seed_for_serve

        return seed_for_serve(base_url, embedded=embedded)
