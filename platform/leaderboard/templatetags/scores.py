"""Template helpers for printing scores at the precision the benchmark's paper uses."""

from django import template

register = template.Library()


@register.filter
def score(value: float | None, precision: int = 2) -> str:
    """Format a 0-100 score with ``precision`` decimals; an absent value prints as an en dash."""
    if value is None:
        return "\u2013"
    return f"{value:.{int(precision)}f}"


@register.filter
def lookup(mapping: dict, key: str):
    return mapping.get(key)
