// undici's Agent without the rest of undici. The package's index also loads
// fetch, WebSocket, EventSource, the cache stores and the mock agents (about
// 1 MB of JavaScript, and node's own bundled undici through them): measured,
// 8-9 MiB more resident memory in a mount, which needs one Agent. undici has
// no "exports" map, so its files are required directly; the index's one side
// effect is done here too: the request API (request, stream, pipeline,
// upgrade, connect) is put on Dispatcher.prototype, where agent.request()
// finds it. The types are the index's. Should a later undici move these files,
// the whole package is loaded instead.
import { createRequire } from 'node:module';
import type { Agent as AgentClass, buildConnector as buildConnectorFn, Dispatcher as DispatcherClass } from 'undici';

const require = createRequire(import.meta.url);

function loadAgent(): typeof AgentClass {
  try {
    const Dispatcher = require('undici/lib/dispatcher/dispatcher.js') as typeof DispatcherClass;
    Object.assign(Dispatcher.prototype, require('undici/lib/api/index.js'));
    return require('undici/lib/dispatcher/agent.js') as typeof AgentClass;
  } catch {
    // files moved in another undici release: the whole package (more memory, same behaviour)
    return (require('undici') as { Agent: typeof AgentClass }).Agent;
  }
}

export const Agent = loadAgent();
export type Agent = AgentClass;

/** undici's socket opener (net or tls), which the Agent's clients load anyway. */
function loadConnector(): typeof buildConnectorFn {
  try {
    return require('undici/lib/core/connect.js') as typeof buildConnectorFn;
  } catch {
    return (require('undici') as { buildConnector: typeof buildConnectorFn }).buildConnector;
  }
}

export const buildConnector = loadConnector();
