"""gunicorn's worker class for `docker/start.sh waits`: uvicorn (an event loop per process) serving
gagar_web.asgi. Imported by the gunicorn master, so it imports nothing of Django.

Lifespan is off (Django has no lifespan handler); the client address stays the peer's, as under
gthread, because the app reads the proxy's X-Real-IP itself (GAGAR_TRUSTED_PROXIES), and no
`Server` header names the software."""

from types import FrameType

from uvicorn_worker import UvicornWorker


class WaitsWorker(UvicornWorker):
    CONFIG_KWARGS = {"loop": "asyncio", "http": "auto", "lifespan": "off", "proxy_headers": False, "server_header": False}

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """SIGQUIT, gunicorn's quick shutdown (SIGINT or SIGQUIT to the master): uvicorn_worker
        routes it here, where gunicorn's Worker only clears `alive`, which uvicorn's server never
        reads, so the worker served on until the master killed it after graceful_timeout (30 s).
        Exit now, as gunicorn's own workers do on SIGQUIT. (SIGTERM, the graceful stop, is
        uvicorn's own handler's.)"""
        self.handle_quit(sig, frame)
