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
#   docker/start.sh grader the grading worker: Celery's gevent pool on the grading queue only
#                          (GAGAR_GRADING_QUEUE), GRADER_CONCURRENCY (256) model conversations in
#                          one process, its database connections from a pool of DATABASE_POOL_SIZE
#                          (8) whatever that concurrency; gevent leaves the sandbox's children to it
#                          (GEVENT_NOWAITPID, grading/jobs/worker.py). Other tasks run on the
#                          prefork worker (`celery -A gagar_web worker -Q celery`).
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
grader)
    export GEVENT_NOWAITPID=1
    export DATABASE_POOL_SIZE="${DATABASE_POOL_SIZE:-8}"
    exec "$PYTHON" -m celery -A gagar_web worker \
        --pool gevent --concurrency "${GRADER_CONCURRENCY:-256}" \
        --queues "${GAGAR_GRADING_QUEUE:-grading}" \
        --hostname "grader@%h" --loglevel "${CELERY_LOGLEVEL:-info}"
    ;;
*)
    echo "usage: $0 [site|waits|grader]" >&2
    exit 2
    ;;
esac
