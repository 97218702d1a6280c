// The web API routes a version has: 13.0.18 removed the api2 share-link views
// (f/{token}/, f/{token}/detail/, d/{token}/dir/), which then answer 404.
import type { Ctx } from '../context.js';
import type { Route } from '../router.js';

const API2_LINK_VIEWS = /^\/api2\/[fd]\/:token\//;

export function forVersion(ctx: Ctx, routes: Route[]): Route[] {
  if (ctx.behaviour.api2LinkViews) return routes;
  return routes.filter((r) => !API2_LINK_VIEWS.test(r.path));
}
