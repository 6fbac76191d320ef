#!/bin/sh
# The web container's start command (the Dockerfile's CMD), run as the image's non-root user:
# apply migrations, then serve with gunicorn. Static files were collected when the image was
# built (docker/collect-static.sh), so nothing here writes into the app directory, which
# belongs to root; uploads go to GAGAR_MEDIA_ROOT (/data/media, owned by the user).
# Threads, not sync workers: a trainer waiting for a step (GET /api/v1/advantages/?wait=)
# holds a thread, and pages keep answering on the others (docs/api.md, benchmarks/training_loop.py).
# tests/test_container_start.py runs this script as an unprivileged user, without Docker.
set -eu
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"

"$PYTHON" manage.py migrate --no-input
exec "$PYTHON" -m gunicorn gagar_web.wsgi \
    --bind "${GUNICORN_BIND:-0.0.0.0:8000}" \
    --workers "${GUNICORN_WORKERS:-4}" \
    --worker-class gthread --threads "${GUNICORN_THREADS:-16}" \
    --timeout "${GUNICORN_TIMEOUT:-600}"
