// Office programs' lock files (src/vfs/locks/office-lock-files.ts), made
// through a Vfs over a FakeApi as LibreOffice and Word make them: the document
// is locked on the server while the lock file exists and unlocked when it
// goes (deleted, or renamed away); a document someone else locked, or a server
// without locks, sees no lock call; the option turns it off.
import { constants as FC } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { lockFileTarget } from '../../../src/vfs/locks/office-lock-files.js';
import { cleanupAfterEach } from '../../helpers/cleanup.js';
import { FakeApi, makeVfs, sleep } from '../../helpers/fake-api.js';

describe('Office lock files', () => {
  const cleanups = cleanupAfterEach();

  async function setup(opts: { community?: boolean; officeLocks?: boolean } = {}) {
    const api = new FakeApi();
    api.communityEdition = !!opts.community;
    const repo = api.addLibrary('lib');
    api.putFile(repo, '/Quarterly report.odt', 'odt');
    api.putFile(repo, '/Document.docx', 'docx');
    api.putFile(repo, '/a.docx', 'short');
    const m = await makeVfs(api, { library: 'lib', officeLocks: opts.officeLocks });
    cleanups.push(m.cleanup);
    const lockOf = (p: string) => (api.nodeAt(repo, p) as { lockedBy?: string } | undefined)?.lockedBy ?? null;
    /** creates a lock file as the programs do: open(O_CREAT), a line, close */
    const make = async (p: string) => {
      const fh = await m.vfs.create(p, 0o644);
      await m.vfs.write(p, fh, Buffer.from('user,host\n'), 10, 0);
      await m.vfs.release(p, fh);
      await sleep(50);
    };
    return { api, repo, vfs: m.vfs, lockOf, make };
  }

  it('names the document of each kind of lock file', () => {
    const names = ['Quarterly report.odt', 'Document.docx', 'a.docx', 'Budget.xlsx'];
    const target = (lock: string) => names.filter(lockFileTarget(lock) ?? (() => false));
    expect(target('.~lock.Quarterly report.odt#')).toEqual(['Quarterly report.odt']);
    expect(target('~$cument.docx')).toEqual(['Document.docx']);
    expect(target('~$a.docx')).toEqual(['a.docx']);
    expect(target('~$dget.xlsx')).toEqual(['Budget.xlsx']);
    expect(lockFileTarget('notes.txt')).toBeNull();
    expect(lockFileTarget('.~lock.x')).toBeNull();
  });

  it('LibreOffice: the document is locked while its lock file exists', async () => {
    const { api, vfs, lockOf, make } = await setup();
    await make('/.~lock.Quarterly report.odt#');
    expect(lockOf('/Quarterly report.odt')).toBe('me@example.com');
    await vfs.unlink('/.~lock.Quarterly report.odt#');
    await sleep(50);
    expect(lockOf('/Quarterly report.odt')).toBeNull();
    expect([api.calls.lockFile, api.calls.unlockFile]).toEqual([1, 1]);
  });

  it('Word: `~$cument.docx` locks Document.docx; a rename away unlocks it', async () => {
    const { vfs, lockOf, make } = await setup();
    await make('/~$cument.docx');
    expect(lockOf('/Document.docx')).toBe('me@example.com');
    expect(lockOf('/a.docx')).toBeNull();
    await vfs.rename('/~$cument.docx', '/old-owner-file.tmp');
    await sleep(50);
    expect(lockOf('/Document.docx')).toBeNull();
  });

  it('a document someone else locked is left alone, and so is one this account had locked already', async () => {
    const { api, repo, vfs, lockOf, make } = await setup();
    api.setLockOwner(repo, '/Document.docx', 'colleague@example.com');
    await make('/~$cument.docx');
    await vfs.unlink('/~$cument.docx');
    api.setLockOwner(repo, '/a.docx', 'me@example.com');
    await make('/~$a.docx');
    await vfs.unlink('/~$a.docx');
    await sleep(50);
    expect(lockOf('/Document.docx')).toBe('colleague@example.com');
    expect(lockOf('/a.docx')).toBe('me@example.com');
    expect(api.calls.lockFile ?? 0).toBe(0);
    expect(api.calls.unlockFile ?? 0).toBe(0);
  });

  it('nothing happens on a server without locks, or with the option off', async () => {
    for (const opts of [{ community: true }, { officeLocks: false }]) {
      const { api, vfs, make } = await setup(opts);
      await make('/.~lock.Quarterly report.odt#');
      const fh = await vfs.open('/.~lock.Quarterly report.odt#', FC.O_RDONLY);
      await vfs.release('/.~lock.Quarterly report.odt#', fh);
      expect(api.calls.lockFile ?? 0).toBe(0);
    }
  });
});
