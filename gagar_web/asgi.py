"""The ASGI application: the process that serves trainers waiting for a step (`docker/start.sh
waits`, which nginx sends `GET /api/v1/advantages/?wait=N` to; docs/deployment.md says why
only those). It answers that endpoint and /healthz only: a request that reaches it by another
way (a path nginx normalised, a port published by mistake) is a JSON 404, so no page or other
API view ever runs in the process that holds the waits and its small connection pool."""

import json
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gagar_web.settings")
django_application = get_asgi_application()

SERVED = frozenset({"/api/v1/advantages/", "/healthz"})
REFUSAL = json.dumps({"detail": "the waits process serves GET /api/v1/advantages/ only; send other requests to the site"})


async def application(scope, receive, send):
    if scope["type"] == "http" and scope.get("path") not in SERVED:
        body = REFUSAL.encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 404, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        return
    await django_application(scope, receive, send)
