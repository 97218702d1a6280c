import type { Route } from './router.js';

export const historyRoutes: Route[] = [];
