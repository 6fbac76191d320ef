"""JSON request bodies without silent data loss: a key sent twice is an error, not last-wins."""

from __future__ import annotations

import json

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


def _refuse_duplicates(pairs: list[tuple[str, object]]) -> dict:
    seen: dict = {}
    for key, value in pairs:
        if key in seen:
            raise ParseError(f"JSON parse error - duplicate key {key!r:.80}: send each key once")
        seen[key] = value
    return seen


class StrictJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            return json.loads(stream.read().decode(encoding), object_pairs_hook=_refuse_duplicates, parse_constant=_no_constant)
        except ParseError:
            raise
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply") from None
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")
