"""The demo's chain node, block feed and alert sink (keeperstate.demo.feed), which the demo monitor
calls; mounted under /demo/ only while the demo app is installed."""

from django.urls import path

from keeperstate.demo import feed

urlpatterns = [
    path("rpc/", feed.rpc, name="demo-rpc"),
    path("feed/", feed.feed, name="demo-feed"),
    path("alerts/", feed.alerts, name="demo-alerts"),
]
