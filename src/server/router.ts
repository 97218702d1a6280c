// A tiny router: `path` patterns with `:name` segments, matched against the
// request path with any trailing slash removed (real servers accept both for
// the endpoints clients use).
import type { Ctx, Req } from './context.js';

export interface Route {
  method: string;
  path: string;
  auth: 'none' | 'user' | 'admin';
  handler: (ctx: Ctx, r: Req) => Promise<void>;
}

interface Compiled extends Route {
  re: RegExp;
}

export class Router {
  private routes: Compiled[] = [];

  add(routes: Route[]): void {
    for (const r of routes) {
      const src = r.path
        .split('/')
        .map((seg) => (seg.startsWith(':') ? '([^/]+)' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
        .join('/');
      this.routes.push({ ...r, re: new RegExp(`^${src}$`) });
    }
  }

  /** The route for method+path, 'method' when only the method is wrong, or null. */
  match(method: string, path: string): { route: Compiled; params: string[] } | 'method' | null {
    const p = path.length > 1 ? path.replace(/\/+$/, '') : path;
    let methodMismatch = false;
    for (const r of this.routes) {
      const m = r.re.exec(p);
      if (!m) continue;
      if (r.method === method || (method === 'HEAD' && r.method === 'GET')) return { route: r, params: m.slice(1) };
      methodMismatch = true;
    }
    return methodMismatch ? 'method' : null;
  }
}
