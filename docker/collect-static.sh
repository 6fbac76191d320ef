#!/bin/sh
# Build step (a RUN in the Dockerfile, as root): collect and compress the static files into
# <app>/staticfiles with the deployed storage (manifest + compression), so the non-root user
# the container runs as never has to write into the app directory.
# With DJANGO_DEBUG=false the settings refuse to load without a secret key and allowed hosts;
# the values below are throwaway, exist only in this one command's environment and are not
# part of the image (the container gets its real ones at run time).
set -eu
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"

DJANGO_DEBUG=false \
DJANGO_SECRET_KEY="build-only-$("$PYTHON" -c 'import secrets; print(secrets.token_urlsafe(64))')" \
DJANGO_ALLOWED_HOSTS=build.invalid \
    "$PYTHON" manage.py collectstatic --no-input --clear -v0
