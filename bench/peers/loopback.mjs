// Loaded with `node --import` in front of Portkey's start-server.js, which listens on every interface
// (`serve({fetch, port})`, no host): a listen given only a port is bound to 127.0.0.1 instead.
import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  if (typeof first === 'number' && typeof args[1] !== 'string') return listen.call(this, first, '127.0.0.1', ...args.slice(1));
  if (first && typeof first === 'object' && 'port' in first && !first.host) return listen.call(this, { ...first, host: '127.0.0.1' }, ...args.slice(1));
  return listen.apply(this, args);
};
