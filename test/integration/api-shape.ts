// What the differential test compares of an answer: its status, the media
// type, the headers clients read, and the body's shape (each JSON path with
// the types found there, never the values), each server's ids, tokens and
// ports named alike so the two answers line up.

/** One answer, as the differential test keeps it. */
export interface Observed {
  /** what was asked, for the report: "GET /api2/repos/<repo>/ as owner" */
  call: string;
  status: number;
  /** the media type without parameters ('' when none) */
  type: string;
  /** oid, Location, Content-Disposition, normalised ('' when absent) */
  headers: Record<string, string>;
  /** JSON path -> the types seen there ("string", "number|null"...); '$' alone for a body that is not JSON */
  shape: Map<string, string>;
  /** the start of the body, for the report */
  excerpt: string;
}

export const READ_HEADERS = ['oid', 'location', 'content-disposition'] as const;

/** Ids, tokens and hosts replaced by placeholders, so that two servers' values compare. */
export function neutral(s: string): string {
  return (
    s
      // seafs serve's file server is on its own port's /seafhttp, the real one on a port of its own
      .replace(/https?:\/\/127\.0\.0\.1:\d+(\/seafhttp)?/g, '<host>')
      .replace(/\/(files|upload-api|update-api|zip|blks)\/[^/?]+/g, '/$1/<token>')
      .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, '<uuid>')
      .replace(/\b[0-9a-f]{40}\b/g, '<id>')
      .replace(/(?<=\/)[0-9A-Za-z]{10,40}(?=\/|$|\?)/g, '<token>')
  );
}

function decodeLoosely(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v === 'boolean' ? 'bool' : typeof v;
}

/** Each path of a JSON value with the types found there; array items merge under `[]`. */
export function jsonShape(v: unknown): Map<string, string> {
  const seen = new Map<string, Set<string>>();
  const walk = (x: unknown, at: string) => {
    const set = seen.get(at) ?? new Set<string>();
    seen.set(at, set);
    set.add(typeOf(x));
    if (Array.isArray(x)) for (const item of x) walk(item, `${at}[]`);
    else if (x && typeof x === 'object')
      for (const [k, val] of Object.entries(x as Record<string, unknown>)) walk(val, `${at}.${k}`);
  };
  walk(v, '$');
  return new Map([...seen].map(([k, s]) => [k, [...s].sort().join('|')]));
}

export function bodyShape(text: string, type: string): Map<string, string> {
  if (text === '') return new Map([['$', '<empty>']]);
  try {
    return jsonShape(JSON.parse(text));
  } catch {
    return new Map([['$', type === 'text/html' ? '<html>' : '<text>']]);
  }
}

export function observe(call: string, status: number, headers: Headers, text: string): Observed {
  const type = (headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
  const h: Record<string, string> = {};
  for (const name of READ_HEADERS) {
    const v = headers.get(name);
    if (v === null) h[name] = '';
    // the file name's value differs with the server's ids; its form (quoted, RFC 5987) is what clients parse
    else if (name === 'content-disposition')
      h[name] = v
        .split(';')
        .map((p) => p.trim().split('=')[0].toLowerCase())
        .join('; ');
    // a relative Location and percent-encoding that parsers undo are the same address
    else if (name === 'location') h[name] = neutral(decodeLoosely(v.startsWith('/') ? `http://127.0.0.1:1${v}` : v));
    else h[name] = neutral(v);
  }
  return {
    call,
    status,
    type,
    headers: h,
    shape: bodyShape(text, type),
    excerpt: neutral(text.length > 300 ? `${text.slice(0, 300)}…` : text),
  };
}

/** The differences between two answers to one call, one line each ("status: serve 201, real 200"). */
export function differences(serve: Observed, real: Observed): string[] {
  const out: string[] = [];
  if (serve.status !== real.status) out.push(`status: serve ${serve.status}, real ${real.status}`);
  if (serve.type !== real.type) out.push(`content-type: serve ${serve.type || '-'}, real ${real.type || '-'}`);
  for (const name of READ_HEADERS) {
    if (serve.headers[name] !== real.headers[name])
      out.push(`${name}: serve ${serve.headers[name] || '-'}, real ${real.headers[name] || '-'}`);
  }
  // a body of another kind altogether (an error text for a listing) is one difference, not one per path
  if (serve.shape.get('$') !== real.shape.get('$')) {
    out.push(`body $: serve ${serve.shape.get('$')}, real ${real.shape.get('$')}`);
    return out;
  }
  const paths = [...new Set([...serve.shape.keys(), ...real.shape.keys()])].sort();
  for (const p of paths) {
    const a = serve.shape.get(p);
    const b = real.shape.get(p);
    // a path under one only missing because its parent is missing is said once, at the parent
    const parent = p.replace(/(\.[^.[\]]+|\[\])$/, '');
    if (parent !== p && (!serve.shape.has(parent) || !real.shape.has(parent))) continue;
    if (a === b) continue;
    if (a === undefined) out.push(`body ${p}: real only (${b})`);
    else if (b === undefined) out.push(`body ${p}: serve only (${a})`);
    else out.push(`body ${p}: serve ${a}, real ${b}`);
  }
  return out;
}
