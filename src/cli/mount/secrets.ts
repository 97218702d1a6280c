// Where the mount's secrets come from: never argv. A token from SEAFS_TOKEN or
// a file, or a password from SEAFS_PASSWORD, a file, or a prompt without echo.
import { readFile } from 'node:fs/promises';
import { UserError } from '../user-error.js';

export interface Secrets {
  token?: string;
  password?: string;
}

/** The first line of a secret file (a password or token), with a clear error when it is missing or empty. */
export async function firstLine(file: string, what: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new UserError(
      `cannot read the ${what} file ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
    );
  }
  const line = text.split(/\r?\n/)[0];
  if (!line) throw new UserError(`the ${what} file ${file} is empty`);
  return line;
}

/** Reads a line from the terminal without echoing it. */
export function promptHidden(
  question: string,
  noTty = 'no password: set SEAFS_PASSWORD, or pass --password-file or --token-file',
): Promise<string> {
  const stdin = process.stdin;
  if (!stdin.isTTY) return Promise.reject(new UserError(noTty));
  return new Promise((resolve, reject) => {
    let value = '';
    // echo off before the question shows: nothing typed after it is echoed
    stdin.setRawMode(true);
    process.stderr.write(question);
    stdin.resume();
    stdin.setEncoding('utf8');
    const finish = (err?: Error) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      process.stderr.write('\n');
      if (err) reject(err);
      else resolve(value);
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n') return finish();
        if (ch === '\u0003') return finish(new Error('interrupted'));
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else value += ch;
      }
    };
    stdin.on('data', onData);
  });
}

export async function readSecrets(opts: {
  tokenFile?: string;
  passwordFile?: string;
  user?: string;
}): Promise<Secrets> {
  if (opts.tokenFile) return { token: await firstLine(opts.tokenFile, 'token') };
  if (process.env.SEAFS_TOKEN && !opts.passwordFile) return { token: process.env.SEAFS_TOKEN.trim() };
  if (!opts.user)
    throw new UserError(
      'name the account with --user EMAIL or -o username=EMAIL (or give a token through SEAFS_TOKEN or --token-file)',
    );
  if (opts.passwordFile) return { password: await firstLine(opts.passwordFile, 'password') };
  if (process.env.SEAFS_PASSWORD) return { password: process.env.SEAFS_PASSWORD };
  return { password: await promptHidden(`Password for ${opts.user}: `) };
}

/** The password of an encrypted library: --library-password-file, SEAFS_LIBRARY_PASSWORD, or a prompt without echo. */
export async function readLibraryPassword(opts: { libraryPasswordFile?: string }, library: string): Promise<string> {
  if (opts.libraryPasswordFile) return firstLine(opts.libraryPasswordFile, 'library password');
  if (process.env.SEAFS_LIBRARY_PASSWORD) return process.env.SEAFS_LIBRARY_PASSWORD;
  const password = await promptHidden(
    `Password of the encrypted library "${library}": `,
    `the library "${library}" is encrypted: give its password through SEAFS_LIBRARY_PASSWORD or --library-password-file`,
  );
  if (!password) throw new UserError(`no password given for the encrypted library "${library}"`);
  return password;
}
