/** An error whose message is for the user as it stands (no stack trace). */
export class UserError extends Error {}
