// The client's public surface.
export { SeafileClient, type ClientOptions } from './client.js';
export { normalizeDir } from './endpoints/paths.js';
export { parseUploadAnswer } from './upload-answer.js';
export { ApiError, isApiError, type ApiErrorKind } from './errors.js';
export { errorMessageOf } from './error-body.js';
export { kindFor, type CallContext } from './status-map.js';
export { multipartFraming, multipartFromFile, type MultipartBody } from './multipart.js';
export type * from './types.js';
