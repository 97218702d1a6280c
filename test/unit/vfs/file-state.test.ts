// The lifecycle of a file with local data: each transition is one method.
import { describe, expect, it } from 'vitest';
import { FileState } from '../../../src/vfs/write/file-state.js';

describe('file state', () => {
  it('an upload of version v leaves the file clean only when nothing was written meanwhile', () => {
    const s = new FileState('id', '/tmp/x', 'repo', '/a.txt');
    s.markDirty();
    const v = s.version;
    s.markDirty(); // written again during the upload
    expect(s.uploaded(v, '/a.txt', 'f1')).toBe(false);
    expect(s.dirty).toBe(true);
    expect(s.uploadedVersion).toBe(v);
    expect(s.uploaded(s.version, '/a.txt', 'f2')).toBe(true);
    expect(s.dirty).toBe(false);
    expect(s.remotePath).toBe('/a.txt');
    expect(s.baseId).toBe('f2');
  });

  it('a failure is counted and kept until the next success; a new file replaces nothing', () => {
    const s = new FileState('id', '/tmp/x', 'repo', '/a.txt');
    expect(s.uploadKind('/a.txt')).toBe('upload');
    s.markDirty();
    s.failed(new Error('one'));
    s.failed(new Error('two'));
    expect(s.failures).toBe(2);
    expect((s.lastError as Error).message).toBe('two');
    s.resetFailures();
    expect(s.failures).toBe(0);
    expect(s.lastError).not.toBeNull();
    s.uploaded(s.version, '/a.txt', 'f1');
    expect(s.lastError).toBeNull();
    expect(s.uploadKind('/a.txt')).toBe('update');
    expect(s.uploadKind('/b.txt')).toBe('upload');
  });

  it('handles count readers and writers apart; disposal happens once', () => {
    const s = new FileState('id', '/tmp/x', 'repo', '/a.txt');
    s.opened(true);
    s.opened(false);
    expect([s.openCount, s.writers]).toEqual([2, 1]);
    s.closed(true);
    expect([s.openCount, s.writers]).toEqual([1, 0]);
    expect(s.markDisposed()).toBe(true);
    expect(s.markDisposed()).toBe(false);
  });
});
