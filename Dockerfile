# The gateway: compiled JavaScript, an esbuild bundle of src/ (dist/, built below by bin/build.mjs)
# that bin/gateway.mjs runs.
FROM node:20-slim

WORKDIR /app

# Dependencies first, so that source edits do not invalidate the npm layer.
COPY package.json package-lock.json ./
RUN npm ci && npm cache clean --force

COPY . .
# Built at image build time: the node user cannot write /app, and a bundle built from the image's
# own sources is up to date, so bin/gateway.mjs does not rebuild at start. A dist/ that came with
# the build context is discarded first.
RUN rm -rf dist && npm run build

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

# The heap flags are npm start's: a smaller young generation and earlier full collections keep the
# resident set near what is live (docs/operations.md, "Memory").
CMD ["node", "--max-semi-space-size=4", "--heap-growing-percent=50", "bin/gateway.mjs", "serve"]
