/** An error whose message is for the user as it stands (no stack trace). */
export class UserError extends Error {}

/** The server refused the API token a command holds (revoked or expired). */
export class TokenRefused extends UserError {}
