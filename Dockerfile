# The gateway: compiled JavaScript, an esbuild bundle of src/ (dist/, built below by bin/build.mjs)
# that bin/gateway.mjs runs.
#
# Node 24, an LTS line with security fixes until April 2028. package.json allows 20.18.1 and later
# and the tests run on 20, but 20 reached its end of life in April 2026 (no more security fixes),
# a production dependency already declares node >= 22 (cookie 2, under fastify's light-my-request),
# and 22's support ends in April 2027. The production install of this file, bundled and served on
# Node 24, answers chat calls (streamed too), the admin API and /metrics as on 20.
FROM node:24-slim

WORKDIR /app

# Dependencies first, so that source edits do not invalidate the npm layer. Production ones only:
# the bundler (esbuild) is one; the SDKs, the type checker and the test runner stay out of the image.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force

COPY . .
# Built at image build time: the node user cannot write /app, and a bundle built from the image's
# own sources is up to date, so bin/gateway.mjs does not rebuild at start. A dist/ that came with
# the build context is discarded first.
RUN rm -rf dist && node bin/build.mjs

# DATA_DIR holds the embedded store (when no DATABASE_URL / EVENTSTORE_URL is set) and the
# generated KEY_ENCRYPTION_SECRET, so it is a volume owned by the unprivileged node user.
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]

# On 0.0.0.0 the gateway serves GET /metrics only to a scrape with `Authorization: Bearer
# <METRICS_TOKEN>`: pass METRICS_TOKEN (`docker run -e METRICS_TOKEN=…`) to scrape it; unset, it
# answers 403 (docs/operations.md, "Metrics").
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    DATA_DIR=/data

EXPOSE 8080
USER node

# Liveness (/healthz); load balancers ask /readyz. The image has no curl: node's own fetch asks.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# The heap flags are npm start's: a smaller young generation and earlier full collections keep the
# resident set near what is live (docs/operations.md, "Memory"). On SIGTERM (docker stop) the
# gateway finishes the requests in flight, for up to SHUTDOWN_GRACE_S, before it exits: give it
# more than that before the SIGKILL (`docker run --stop-timeout`, Compose's stop_grace_period), and
# run it with `--init` (Compose: `init: true`) so that PID 1 is an init that forwards signals.
CMD ["node", "--max-semi-space-size=16", "--heap-growing-percent=50", "--single-threaded-gc", "bin/gateway.mjs", "serve"]
