"""Template helpers for printing scores at the precision the benchmark's paper uses."""

from django import template
from django.urls import reverse
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from biolm.durations import gpu_hours_in_words, in_words
from leaderboard.tables import short_citation

register = template.Library()


@register.filter
def score(value: float | None, precision: int = 2) -> str:
    """Format a 0-100 score with ``precision`` decimals; an absent value prints as an em dash, never 0."""
    if value is None:
        return "\u2014"
    return f"{value:.{int(precision)}f}"


@register.filter
def took(seconds: float | None) -> str:
    """A wall time or a time to the leaderboard: ``2 h 5 min``; a dash when unknown."""
    return in_words(seconds)


@register.filter
def gpu_hours(hours: float | None) -> str:
    """``0.42 GPU-hours``, ``no GPU`` for work done on CPUs, a dash when unknown."""
    return gpu_hours_in_words(hours)


@register.filter
def lookup(mapping: dict, key: str):
    return mapping.get(key)


@register.filter
def attr_of(obj, name: str):
    """A named attribute, for a form field whose name a loop gives (a view's filter value)."""
    return getattr(obj, name, "")


@register.filter
def sort_link(view, key: str) -> str:
    return view.sort_link(key)


@register.filter
def aria_sort(view, key: str) -> str:
    return view.aria_sort(key)


@register.filter
def query_without_pins(view) -> str:
    return view.query(pins=())


@register.filter
def params(count: int | None) -> str:
    """A parameter count as readers say it: 110M, 8.9B; "—" when unknown."""
    if not count:
        return "\u2014"
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if count >= size:
            value = count / size
            return f"{value:.1f}{suffix}" if value < 10 else f"{value:.0f}{suffix}"
    return str(count)


@register.filter
def short_source(citation: str) -> str:
    """A citation as an origin badge holds it ("Gu 2021, T6"); the full text goes in its tooltip."""
    return short_citation(citation or "")


@register.filter
def convention_link(label: str) -> SafeString:
    """A score's name with "platform convention" linked to where the page on ranks explains it (escaped)."""
    text = str(escape(label))
    if "platform convention" not in text:
        return mark_safe(text)
    link = format_html('<a href="{}#platform-convention">platform convention</a>', reverse("leaderboard:how-ranks"))
    return mark_safe(text.replace("platform convention", str(link), 1))
