// File-server calls refused because the server forgot an encrypted library's
// password (library-passwords.ts): which answers mean that, and the streaming
// GET that unlocks again and starts over once when its answer is such a
// refusal. (API calls carrying a library id are resent by the HTTP core,
// uploads by their retry loops.)
import { ApiError } from './errors.js';
import type { StreamControl, StreamSink } from './types.js';

/** Unlocks library-wise again; true once it is unlocked (see LibraryPasswords.again). */
export type Relock = (repo: string, since: number) => Promise<boolean>;

/**
 * A file-server answer that may mean "password forgotten": a refusal naming
 * it (downloads: 400 "Repo is encrypted. Please provide password to view
 * it.", Go uploads: 400), or, for an upload or update, the C file server's
 * bare 500 "Internal error" (it does not say why: the caller unlocks again
 * and resends once, only into a library it holds a password for; a second
 * 500 is a real server error).
 */
export function passwordRefusal(e: unknown, ctx: 'download' | 'upload'): e is ApiError {
  if (!(e instanceof ApiError)) return false;
  if (e.kind === 'password_required') return true;
  return ctx === 'upload' && e.status === 500;
}

/**
 * A streaming GET (`open` starts one into the sink it is given) that, when
 * its answer is a password refusal (before any body), unlocks `repo` again
 * and starts over once. The caller's sink sees one stream: head, body, one end().
 */
export function relockingStream(
  open: (sink: StreamSink) => StreamControl,
  sink: StreamSink,
  repo: string,
  relock: Relock,
): StreamControl {
  let current: StreamControl | null = null;
  let ended = false;
  let retried = false;
  let paused = false;
  const end = (err: unknown | null) => {
    if (ended) return;
    ended = true;
    sink.end(err);
  };
  const start = (): void => {
    const since = Date.now();
    let headed = false;
    current = open({
      head: (status, first, length, etag) => {
        headed = true;
        sink.head(status, first, length, etag);
      },
      space: () => sink.space(),
      wrote: (n) => sink.wrote(n),
      end: (err) => {
        if (!err || headed || retried || ended || !passwordRefusal(err, 'download')) return end(err);
        retried = true;
        current = null;
        void relock(repo, since)
          .catch(() => false)
          .then((ok) => {
            if (ended) return; // destroyed meanwhile
            if (!ok) return end(err);
            try {
              start();
              if (paused) current!.pause();
            } catch (e) {
              end(e);
            }
          });
      },
    });
  };
  start();
  return {
    pause: () => {
      paused = true;
      current?.pause();
    },
    resume: () => {
      paused = false;
      current?.resume();
    },
    destroy: () => {
      if (current) current.destroy();
      else end(null); // between the refusal and the second start
    },
  };
}
