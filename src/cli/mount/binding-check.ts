// Before a mount: say once, on the user's terminal, when the fuse-native binding
// lacks seafs's fixes (src/fuse/binding.ts), and turn the extended attributes
// off then: the unfixed binding copies a long value past the caller's buffer.
import { bindingWarning, fuseBinding, rebuildHint, type BindingInfo } from '../../fuse/binding.js';

/** The warning to print (null: the current fixed binding is in use); sets `settings.xattrs` false with the unfixed one. */
export function checkBinding(settings: { xattrs?: boolean }, info: BindingInfo = fuseBinding()): string | null {
  const warning = bindingWarning(info, rebuildHint());
  if (info.kind === 'prebuilt') settings.xattrs = false;
  return warning;
}
