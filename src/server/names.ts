// Name rules of real servers: what is refused, and how clashes are renamed.
import { HttpError } from './http.js';
import type { DirEnt } from './tree.js';

export function isValidName(name: string): boolean {
  if (!name || name === '.' || name === '..') return false;
  if (name.includes('/') || name.includes('\\') || name.includes('\0')) return false;
  return Buffer.byteLength(name, 'utf8') <= 255;
}

export function checkName(name: string | undefined): string {
  if (name === undefined || !isValidName(name)) throw new HttpError(400, 'name invalid.');
  return name;
}

/** `name` if free in `entries`, else `name (1).ext`, `name (2).ext`, ... */
export function uniqueName(entries: DirEnt[], name: string): string {
  const taken = new Set(entries.map((e) => e.name));
  if (!taken.has(name)) return name;
  const dot = name.lastIndexOf('.');
  const base = dot > 0 ? name.slice(0, dot) : name;
  const ext = dot > 0 ? name.slice(dot) : '';
  for (let i = 1; ; i++) {
    const candidate = `${base} (${i})${ext}`;
    if (!taken.has(candidate)) return candidate;
  }
}
