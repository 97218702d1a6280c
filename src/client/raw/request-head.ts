// The head of an HTTP/1.1 request written to a bare socket (raw-post.ts,
// stream-upload.ts; raw-get.ts writes its own): request line, Host, the
// headers given, the one User-Agent of seafs, and Connection: close (each
// of these requests owns its connection).

/** The User-Agent of every request seafs sends (the API client's default too). */
export const USER_AGENT = 'seafs/0.1';

/**
 * The head as latin1 bytes; `headers` in order, those with an undefined
 * value left out.
 */
export function requestHead(
  method: string,
  target: string,
  host: string,
  headers: [string, string | undefined][],
): Buffer {
  let head = `${method} ${target} HTTP/1.1\r\nHost: ${host}\r\n`;
  for (const [name, value] of headers) if (value !== undefined) head += `${name}: ${value}\r\n`;
  head += `User-Agent: ${USER_AGENT}\r\nConnection: close\r\n\r\n`;
  return Buffer.from(head, 'latin1');
}

/** The request target of a POST to an upload or update link: its path and query plus ret-json=1. */
export function uploadTarget(u: URL): string {
  return `${u.pathname}${u.search ? `${u.search}&ret-json=1` : '?ret-json=1'}`;
}
