"""The ASGI application: the process that serves trainers waiting for a step (`docker/start.sh
waits`, which nginx sends `GET /api/v1/advantages/?wait=N` to; docs/deployment.md says why
only those). It serves every URL, so a request that reaches it by another way is answered too."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gagar_web.settings")
application = get_asgi_application()
