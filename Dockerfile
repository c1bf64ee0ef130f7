# The gateway: TypeScript sources run through tsx (bin/gateway.mjs), no build step.
FROM node:20-slim

WORKDIR /app

# Dependencies first, so that source edits do not invalidate the npm layer.
COPY package.json package-lock.json ./
RUN npm ci && npm cache clean --force

COPY . .

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

CMD ["node", "bin/gateway.mjs", "serve"]
