// Reading the answer of an HTTP/1.x request sent over a bare socket (the
// mount's upload POSTs): status line and body, with chunked bodies decoded.

/** Status and body of a complete HTTP/1.x answer (chunked or not); null when the bytes hold none. */
export function parseAnswer(raw: Buffer): { status: number; text: string } | null {
  const i = raw.indexOf('\r\n\r\n');
  if (i < 0) return null;
  const head = raw.toString('latin1', 0, i).split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(head[0]);
  if (!m) return null;
  let body = raw.subarray(i + 4);
  if (head.some((l) => /^transfer-encoding:\s*chunked/i.test(l))) {
    const parts: Buffer[] = [];
    for (let p = 0; ;) {
      const e = body.indexOf('\r\n', p);
      if (e < 0) break;
      const n = parseInt(body.toString('latin1', p, e), 16);
      if (!n) break;
      parts.push(body.subarray(e + 2, e + 2 + n));
      p = e + 2 + n + 2;
    }
    body = Buffer.concat(parts);
  }
  return { status: Number(m[1]), text: body.toString('utf8') };
}
