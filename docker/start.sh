#!/bin/sh
# The web containers' start command (the Dockerfile's CMD), run as the image's non-root user.
# Static files were collected when the image was built (docker/collect-static.sh), so nothing
# here writes into the app directory, which belongs to root; uploads go to GAGAR_MEDIA_ROOT
# (/data/media, owned by the user). tests/test_container_start.py runs both roles as an
# unprivileged user, without Docker.
#
#   docker/start.sh        the site: apply migrations, then gunicorn with gthread workers
#                          (GUNICORN_WORKERS x GUNICORN_THREADS). WSGI, so request bodies stream
#                          into the views (ingest, uploads) and exports stream out.
#   docker/start.sh waits  trainers waiting for a step (GET /api/v1/advantages/?wait=N, routed
#                          here by nginx): gunicorn with uvicorn workers on gagar_web.asgi, where a
#                          wait is an await, not a thread, and the process's database connections
#                          come from a pool of DATABASE_POOL_SIZE (docs/deployment.md). It starts
#                          once the site's migrations are applied.
set -eu
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"

case "${1:-site}" in
site)
    "$PYTHON" manage.py migrate --no-input
    exec "$PYTHON" -m gunicorn gagar_web.wsgi \
        --bind "${GUNICORN_BIND:-0.0.0.0:8000}" \
        --workers "${GUNICORN_WORKERS:-4}" \
        --worker-class gthread --threads "${GUNICORN_THREADS:-16}" \
        --timeout "${GUNICORN_TIMEOUT:-600}"
    ;;
waits)
    until "$PYTHON" manage.py migrate --check >/dev/null 2>&1; do
        echo "waits: migrations not applied yet (the site applies them); checking again in 2 s"
        sleep 2
    done
    export DATABASE_POOL_SIZE="${DATABASE_POOL_SIZE:-4}"
    exec "$PYTHON" -m gunicorn gagar_web.asgi \
        --bind "${GUNICORN_BIND:-0.0.0.0:8000}" \
        --workers "${GUNICORN_WORKERS:-2}" \
        --worker-class gagar_web.waits_worker.WaitsWorker \
        --timeout "${GUNICORN_TIMEOUT:-600}"
    ;;
*)
    echo "usage: $0 [site|waits]" >&2
    exit 2
    ;;
esac
