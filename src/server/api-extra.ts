import type { Route } from './router.js';

export const extraRoutes: Route[] = [];
