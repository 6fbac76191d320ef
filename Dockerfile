FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml ./
COPY gagar_web gagar_web
COPY grading grading
COPY reviews reviews
COPY templates templates
COPY static static
COPY manage.py ./
RUN pip install --no-cache-dir .
RUN useradd --create-home gagar
USER gagar
EXPOSE 8000
