"""``{% icon name %}``: a registry icon name as inline SVG (nothing when the icon is missing)."""

from django import template
from django.utils.safestring import SafeString

from builder.icons import icon_svg

register = template.Library()


@register.simple_tag
def icon(name: str) -> SafeString | str:
    return icon_svg(name) or ""
