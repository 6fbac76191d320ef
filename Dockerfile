FROM python:3.11-slim
# PYTHONPATH: the code runs from /app (where templates, static files and staticfiles are),
# never from the copy `pip install .` leaves in site-packages.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PYTHONPATH=/app \
    GAGAR_MEDIA_ROOT=/data/media \
    GAGAR_REPO_CACHE=/data/repos
WORKDIR /app
# git: the grader workspace's repository mirrors; bubblewrap: the sandbox of its checks
# (GAGAR_SANDBOX=bubblewrap; docs/workspace.md says what the container needs for it), tar to
# copy a worktree into it.
RUN apt-get update \
    && apt-get install -y --no-install-recommends git bubblewrap tar \
    && rm -rf /var/lib/apt/lists/*
COPY pyproject.toml ./
COPY gagar_web gagar_web
COPY grading grading
COPY reviews reviews
COPY templates templates
COPY static static
COPY manage.py ./
COPY docker docker
RUN pip install --no-cache-dir .
# Static files are collected now, as root, into /app/staticfiles (read-only at run time).
# The script passes throwaway DEBUG-off settings to that one command; none is kept in the image.
RUN docker/collect-static.sh
# /app stays root's. The user owns /data only: uploads in /data/media and repository mirrors in
# /data/repos (compose volumes, which Docker initialises from these directories, ownership and
# mode included, when they are first created). Owner only: they hold every project's data.
RUN useradd --create-home --uid 10001 gagar \
    && install -d -o gagar -g gagar -m 0700 /data /data/media /data/repos
USER gagar
EXPOSE 8000
# migrate, then gunicorn (the site); `docker/start.sh waits` serves the waits (docker-compose.yml);
# tested without Docker by tests/test_container_start.py
CMD ["/app/docker/start.sh"]
