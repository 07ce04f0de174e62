"""Parsing of the ISO-8601 run timestamps recorded in provenance."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any


def parse_time(value: Any) -> datetime | None:
    """A UTC ``datetime`` from an ISO-8601 string, or None (unparsable / "unavailable: …").

    A naive timestamp is taken as UTC.
    """
    if not isinstance(value, str) or value.startswith("unavailable"):
        return None
    try:
        dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt.replace(tzinfo=timezone.utc) if dt.tzinfo is None else dt.astimezone(timezone.utc)
