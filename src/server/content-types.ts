// The Content-Type the file server gives a download, by the name's suffix, as
// the C fileserver does: a short fixed list (suffixes compared as written:
// `jpg` and `JPG` are listed, `Jpg` is not), everything else
// application/octet-stream. (It labels text as charset=gbk; that is left out
// here, since the bytes are whatever was uploaded.)
const BY_SUFFIX: Record<string, string> = {
  txt: 'text/plain',
  doc: 'application/vnd.ms-word',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  ppt: 'application/vnd.ms-powerpoint',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  xls: 'application/vnd.ms-excel',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  pdf: 'application/pdf',
  zip: 'application/zip',
  mp3: 'audio/mp3',
  mpeg: 'video/mpeg',
  mp4: 'video/mp4',
  jpg: 'image/jpeg',
  JPG: 'image/jpeg',
  jpeg: 'image/jpeg',
  JPEG: 'image/jpeg',
  png: 'image/png',
  PNG: 'image/png',
  gif: 'image/gif',
  GIF: 'image/gif',
  svg: 'image/svg+xml',
  SVG: 'image/svg+xml',
};

export function downloadContentType(name: string): string {
  const dot = name.lastIndexOf('.');
  return (
    (dot >= 0 && Object.hasOwn(BY_SUFFIX, name.slice(dot + 1)) && BY_SUFFIX[name.slice(dot + 1)]) ||
    'application/octet-stream'
  );
}
