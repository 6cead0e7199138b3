# Production image: one image for web, worker and beat (the command differs), talking to real
# PostgreSQL (with pgvector) and Redis given by DATABASE_URL and REDIS_URL. See compose.yaml.
FROM python:3.11.7-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DJANGO_SETTINGS_MODULE=config.settings \
    MEMORY_DATA_DIR=/data

WORKDIR /app
COPY requirements/base.txt requirements/base.txt
RUN pip install --no-cache-dir -r requirements/base.txt

COPY . .
RUN useradd --system --home-dir /app --uid 10001 memory \
    && mkdir -p /data/static /data/beat \
    && SECRET_KEY=build-only DATABASE_URL=postgresql://build@localhost/build REDIS_URL=redis://localhost:6379/0 \
       python manage.py collectstatic --no-input \
    && chown -R memory /data

USER memory
EXPOSE 8000
CMD ["python", "-m", "uvicorn", "config.asgi:application", "--host", "0.0.0.0", "--port", "8000", "--lifespan", "on", "--proxy-headers"]
