# The gateway's container image:  docker build -t xreg-gateway .
#
# Three stages: GraphiQL's pinned npm packages are fetched with Node.js (no install scripts), a
# Python stage verifies them against gateway/static/graphiql.manifest.json and builds the
# gateway's wheel and virtualenv (no extras: the plain install is the whole gateway, the bulk
# read's PyArrow included; every dependency pinned by requirements.lock and installed from
# wheels: no compiler anywhere), and the final stage holds only the Python runtime and that
# virtualenv, running as an unprivileged user. tests/deploy/test_dockerfile.py checks this file's
# structure (no container engine is available where the tests run).
#
# Base images are pinned by exact version tags; pin them by digest as well where your registry
# policy asks for it (`FROM python:3.11.14-slim-bookworm@sha256:…`).

# -- 1: GraphiQL's browser assets (web/package-lock.json, exact versions and integrity hashes) ----
FROM node:22.21.1-bookworm-slim AS assets
WORKDIR /src/web
COPY web/package.json web/package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund --loglevel=error

# -- 2: the assets verified, the wheel built, the virtualenv installed --------------------------
FROM python:3.11.14-slim-bookworm AS build
# pip compiles the installed modules: the runtime's root filesystem may be read-only.
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml requirements.lock README.md ./
COPY gateway/ gateway/
COPY resolvers/ resolvers/
COPY adapters/ adapters/
COPY xreg/ xreg/
COPY web/copy_assets.py web/
COPY --from=assets /src/web/node_modules/ web/node_modules/
# Copies the manifest's files into gateway/static/graphiql/ and fails on any SHA-384 mismatch.
RUN python web/copy_assets.py --set graphiql
# Installed without extras (the test extra is test tools only), the package (not this source tree:
# -I, from /) must import every route and carry verified assets; tests/deploy/test_install.py
# installs and runs the wheel the same way.
RUN python -m venv /opt/xreg-gateway \
 && /opt/xreg-gateway/bin/pip install pip==26.3 \
 && /opt/xreg-gateway/bin/pip wheel --no-deps --wheel-dir /tmp/wheels . \
 && /opt/xreg-gateway/bin/pip install --only-binary=:all: -c requirements.lock /tmp/wheels/xreg_gateway-*.whl \
 && cd / && /opt/xreg-gateway/bin/python -I -c "import gateway.app; from gateway.graphiql import ASSETS; ASSETS.load()"

# -- 3: the runtime -----------------------------------------------------------------------------
FROM python:3.11.14-slim-bookworm
LABEL org.opencontainers.image.title="xreg-gateway" \
      org.opencontainers.image.description="A GraphQL gateway over xRegistry 1.0 registries" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PATH=/opt/xreg-gateway/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    XREG_DATA_DIR=/var/lib/xreg-gateway
RUN groupadd --system --gid 10001 xreg \
 && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/xreg-gateway --no-create-home \
      --shell /usr/sbin/nologin xreg \
 && install -d -o 10001 -g 10001 -m 0750 /var/lib/xreg-gateway
COPY --from=build /opt/xreg-gateway /opt/xreg-gateway
# The sample registry, which the Helm chart's seed initContainer imports by default (seed.paths).
COPY samples/ /usr/share/xreg-gateway/samples/
# Numeric, so that Kubernetes' runAsNonRoot can verify it.
USER 10001:10001
WORKDIR /var/lib/xreg-gateway
EXPOSE 8080
# /healthz answers 200 with the store's revision; slim images have no curl, so Python asks.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=4).status != 200)"]
CMD ["xreg-gateway", "serve", "--host", "0.0.0.0", "--port", "8080"]
