// The head of an HTTP/1.1 request written to a bare socket (raw-get.ts,
// raw-post.ts, stream-upload.ts): request line, Host, the headers given,
// the one User-Agent of seafs, and Connection: close (each of these
// requests owns its connection).

/** The User-Agent of every request seafs sends (the API client's default too). */
export const USER_AGENT = 'seafs/0.1';
