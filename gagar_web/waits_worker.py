"""gunicorn's worker class for `docker/start.sh waits`: uvicorn (an event loop per process) serving
gagar_web.asgi. Imported by the gunicorn master, so it imports nothing of Django.

Lifespan is off (Django has no lifespan handler); the client address stays the peer's, as under
gthread, because the app reads the proxy's X-Real-IP itself (GAGAR_TRUSTED_PROXIES), and no
`Server` header names the software."""

from uvicorn_worker import UvicornWorker


class WaitsWorker(UvicornWorker):
    CONFIG_KWARGS = {"loop": "asyncio", "http": "auto", "lifespan": "off", "proxy_headers": False, "server_header": False}
