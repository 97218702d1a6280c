import { describe, expect, it } from 'vitest';
import { conflictName, conflictStamp, freeConflictName } from '../../../src/vfs/write/conflict-name.js';

const when = new Date(2026, 10, 3, 9, 5, 7); // local time: 2026-11-03 09:05:07

describe('conflict copy names', () => {
  it('stamps the local time as Seafile clients do', () => {
    expect(conflictStamp(when)).toBe('2026-11-03-09-05-07');
  });

  it('puts the tag before the last extension', () => {
    expect(conflictName('report.final.docx', 'alice@example.com', when)).toBe(
      'report.final (SFConflict alice@example.com 2026-11-03-09-05-07).docx',
    );
  });

  it('appends the tag to a name without an extension, or a dot-file', () => {
    expect(conflictName('Makefile', 'bob@example.com', when)).toBe(
      'Makefile (SFConflict bob@example.com 2026-11-03-09-05-07)',
    );
    expect(conflictName('.bashrc', 'bob@example.com', when)).toBe(
      '.bashrc (SFConflict bob@example.com 2026-11-03-09-05-07)',
    );
  });

  it('leaves the author out when it is not known', () => {
    expect(conflictName('a.txt', '', when)).toBe('a (SFConflict 2026-11-03-09-05-07).txt');
  });

  it('numbers a second conflict in the same second', () => {
    const taken = new Set([conflictName('a.txt', 'x@y', when)]);
    expect(freeConflictName('a.txt', 'x@y', when, (n) => taken.has(n))).toBe(
      'a (SFConflict x@y 2026-11-03-09-05-07 2).txt',
    );
    expect(freeConflictName('b.txt', 'x@y', when, (n) => taken.has(n))).toBe(
      'b (SFConflict x@y 2026-11-03-09-05-07).txt',
    );
  });
});
