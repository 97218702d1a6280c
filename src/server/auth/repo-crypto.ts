// Encrypted libraries: the password verifier ("magic") real servers keep,
// and unlocking a library for a user (POST /api2/repos/{id}/ with password,
// or /api/v2.1/repos/{id}/set-password/). Content stays plain on disk: this
// server models the protocol, not the cryptography.
import { pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Ctx, Req } from '../context.js';
import type { RepoMeta } from '../store/db.js';
import { HttpError } from '../http.js';

export function magicOf(repoId: string, password: string, salt: string): string {
  return pbkdf2Sync(repoId + password, Buffer.from(salt, 'hex'), 1000, 32, 'sha256').toString('hex');
}

export function passwordMatches(repo: RepoMeta, password: string): boolean {
  const a = Buffer.from(magicOf(repo.id, password, repo.salt), 'hex');
  const b = Buffer.from(repo.magic, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The encryption fields of a new library (all empty when there is no password). */
export function encryptionFields(id: string, passwd: string | undefined) {
  const salt = randomBytes(32).toString('hex');
  return {
    encrypted: !!passwd,
    encVersion: passwd ? 2 : 0,
    magic: passwd ? magicOf(id, passwd, salt) : '',
    salt,
    randomKey: passwd ? randomBytes(48).toString('hex') : '',
  };
}

export async function unlockRepo(ctx: Ctx, r: Req, password: string | undefined): Promise<void> {
  const { repo } = ctx.repoFor(r.user!, r.params[0]);
  if (!repo.encrypted) throw new HttpError(409, 'Library is not encrypted.');
  if (!password) throw new HttpError(400, 'Password is required.');
  if (!passwordMatches(repo, password)) throw new HttpError(400, 'Incorrect password');
  ctx.unlock(r.user!.email, repo.id);
}
