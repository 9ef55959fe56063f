# The controller image, ghcr.io/recon8s/recon8s:<version of package.json>:
#   docker build -t ghcr.io/recon8s/recon8s:0.1.0 .
# The operator install (constructs/operator/operator-chart.ts) runs it with `args: [controller, ...]` as uid/gid 65532.
# test/unit/package-dockerfile.test.ts checks what this file promises, and
# test/integration/package-docker.test.ts replays its steps without Docker.

# Build: compile constructs/ and lib/ to build/, then drop the dev dependencies.
FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: no production dependency has an install script (the unit test checks the
# lockfile). The dev ones that do are esbuild (for tsx) and `node` (the Node 24 that npm scripts run
# under on a Node 20 machine), which would download a second Node; this image already is Node 24.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY constructs ./constructs
COPY lib ./lib
RUN npm run build
RUN npm prune --omit=dev --no-audit --no-fund

# Runtime: Node 24, the compiled code, the production dependencies; nothing runs in this stage.
FROM node:24-slim
LABEL org.opencontainers.image.title="@recon8s/controller" \
      org.opencontainers.image.description="Kubernetes controller for App and MySQLCluster resources (recon8s.dev/v1alpha1)" \
      org.opencontainers.image.source="https://github.com/recon8s/recon8s" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="0.1.0"
WORKDIR /app
# package.json is needed at run time: its "type": "module" makes build/**/*.js ES modules.
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/build ./build
# Numeric, so that the kubelet can check runAsNonRoot without an /etc/passwd entry.
USER 65532:65532
# /metrics and /healthz + /readyz (the controller's defaults).
EXPOSE 8080 8081
# A young generation of 2 x 4 MiB instead of V8's 2 x 16 MiB: the controller's garbage is short-lived
# (requests, watch events, renders), and the larger one only let the heap grow (peak RSS at 300 Apps
# 306 → 209 MiB in the benchmark, which starts the controller with these same flags).
ENTRYPOINT ["node", "--max-semi-space-size=4", "build/lib/cli/main.js"]
CMD ["controller"]
