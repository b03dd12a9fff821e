# One image for web, workers and beat. The GPU worker gets a CUDA device through
# docker-compose's device reservation; install a CUDA build of torch there with
# TORCH_INDEX_URL (the default below is the CPU build).
FROM python:3.11-slim
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ENV PYTHONUNBUFFERED=1 PYTHONPATH=/app/platform:/app DJANGO_SETTINGS_MODULE=biolm_site.settings
WORKDIR /app
COPY requirements.lock pyproject.toml ./
RUN pip install --no-cache-dir --extra-index-url "$TORCH_INDEX_URL" -r requirements.lock
COPY . .
# Static files are collected into the image (hashed names, gzipped), outside /app/var: docker-compose mounts a
# volume there, which would hide them and, once it exists, keep the previous image's files after an upgrade.
ENV STATIC_ROOT=/app/staticfiles
RUN python manage.py collectstatic --noinput
EXPOSE 8000
CMD ["gunicorn", "biolm_site.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3"]
