# OpenBrowse in a container: Debian 12 with the same packages `make run` installs.
#   docker build -t openbrowse .
#   docker run -p 8420:8420 -e API_KEY=change-me -e DASHBOARD_PASSWORD=... -e OPENAI_API_KEY=... \
#     --cap-add SYS_ADMIN --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
#     -v openbrowse-data:/app/data openbrowse
# The server runs as root inside the container so it can build each slot's sandbox (namespaces, a uid of its own,
# cgroup caps: spec §24.2); the three --cap-add/--security-opt flags let it create namespaces. Without them sessions
# refuse to start and name ALLOW_UNSANDBOXED=1 (development only).
FROM python:3.11-slim-bookworm

ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      chromium xvfb x11vnc websockify novnc fonts-dejavu-core fonts-liberation bubblewrap socat iproute2 ffmpeg fontconfig curl \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app

# Dependencies first (cached layer), then the source.
COPY pyproject.toml requirements.lock README.md ./
RUN pip install --no-cache-dir --require-hashes -r requirements.lock
COPY openbrowse openbrowse
RUN pip install --no-cache-dir --no-deps . && mkdir -p /app/data && chmod 0700 /app/data

ENV OPENBROWSE_HOME=/app HOST=0.0.0.0 PORT=8420
VOLUME ["/app/data"]
EXPOSE 8420
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD curl -fsS http://127.0.0.1:8420/health || exit 1
# API_KEY and DASHBOARD_PASSWORD (its own secret) are required: the server refuses to start on 0.0.0.0 without them.
CMD ["python", "-m", "openbrowse", "serve"]
