// The name mapping of --links: a link NAME is the server's file NAME.rclonelink, rclone's own format.
import { describe, expect, it } from 'vitest';
import {
  LINK_SUFFIX,
  isLinkFileName,
  linkNameOf,
  shownNames,
  storedLinkName,
} from '../../../../src/vfs/links/link-names.js';

describe('link names', () => {
  it('stores a link under its name plus .rclonelink, and reads the name back', () => {
    expect(LINK_SUFFIX).toBe('.rclonelink');
    expect(storedLinkName('a')).toBe('a.rclonelink');
    expect(storedLinkName('/d/x.txt')).toBe('/d/x.txt.rclonelink');
    expect(linkNameOf('a.rclonelink')).toBe('a');
    expect(linkNameOf('x.txt.rclonelink')).toBe('x.txt');
    expect(linkNameOf(storedLinkName('.hidden'))).toBe('.hidden');
  });

  it('leaves other names alone: no suffix, the suffix elsewhere, a bare .rclonelink', () => {
    expect(linkNameOf('a.txt')).toBeNull();
    expect(linkNameOf('a.rclonelink.txt')).toBeNull();
    expect(linkNameOf('a.RCLONELINK')).toBeNull();
    expect(linkNameOf('.rclonelink')).toBeNull();
    expect(isLinkFileName('.rclonelink')).toBe(false);
    expect(isLinkFileName('b.rclonelink')).toBe(true);
  });

  it('shows link files without the suffix, once beside a real entry of that name, folders as they are', () => {
    const dirs = new Set(['d.rclonelink']);
    const shown = shownNames(['a', 'a.rclonelink', 'b.rclonelink', 'c.txt', 'd.rclonelink'], (n) => !dirs.has(n));
    expect(shown.sort()).toEqual(['a', 'b', 'c.txt', 'd.rclonelink']);
  });
});
