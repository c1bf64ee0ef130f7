# The gateway: compiled JavaScript, an esbuild bundle of src/ (dist/, built below by bin/build.mjs)
# that bin/gateway.mjs runs. Node 24 is the active LTS line (20 left maintenance in April 2026).
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

ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    DATA_DIR=/data

EXPOSE 8080
USER node

# The image has no curl: node's own fetch asks /healthz.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# The heap flags are npm start's: a smaller young generation and earlier full collections keep the
# resident set near what is live (docs/operations.md, "Memory"). On SIGTERM (docker stop) the
# gateway finishes the requests in flight before it exits: give it time (compose: stop_grace_period).
CMD ["node", "--max-semi-space-size=4", "--heap-growing-percent=50", "bin/gateway.mjs", "serve"]
