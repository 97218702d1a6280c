// A failed TLS handshake in one line the user can act on: what is wrong with
// the certificate (or with the client's own) and what fixes it. Node reports
// OpenSSL's verification result as the error's code (UNABLE_TO_VERIFY_LEAF_SIGNATURE,
// CERT_HAS_EXPIRED...) and a name mismatch as ERR_TLS_CERT_ALTNAME_INVALID;
// a server's refusal of the client comes as an alert (ERR_SSL_..._ALERT_...).

const TRUST_FIX =
  'install its CA in the system store (/usr/local/share/ca-certificates/, then update-ca-certificates) or pass --ca-file FILE';

const UNTRUSTED = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'INVALID_CA',
]);
const SELF_SIGNED = new Set(['DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN']);

/** The cause and fix of a TLS failure with this code; null for a code that is not about TLS. */
export function tlsProblem(code: string | undefined, host: string): string | null {
  if (!code) return null;
  const at = `the certificate of ${host}`;
  if (UNTRUSTED.has(code)) return `${at} is issued by a CA this machine does not trust (${code}): ${TRUST_FIX}`;
  if (SELF_SIGNED.has(code))
    return `${at} is self-signed or issued by a CA this machine does not trust (${code}): ${TRUST_FIX}`;
  if (code === 'CERT_HAS_EXPIRED')
    return `${at} has expired (${code}): the server's administrator must renew it (or this machine's clock is wrong)`;
  if (code === 'CERT_NOT_YET_VALID')
    return `${at} is not valid yet (${code}): check this machine's clock and time zone`;
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID')
    return `${at} is for another host name (${code}): use the name the certificate is made for in the URL, or have it reissued for ${hostOnly(host)}`;
  if (code === 'CERT_REVOKED') return `${at} is revoked (${code}): the server's administrator must replace it`;
  if (code === 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED')
    return `${host} asks for a client certificate (${code}): pass --client-cert FILE --client-key FILE`;
  if (
    code === 'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA' ||
    code === 'ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE' ||
    code === 'ERR_SSL_SSLV3_ALERT_CERTIFICATE_UNKNOWN' ||
    code === 'ERR_SSL_TLSV1_ALERT_ACCESS_DENIED' ||
    code === 'ERR_SSL_SSLV3_ALERT_CERTIFICATE_EXPIRED' ||
    code === 'ERR_SSL_SSLV3_ALERT_CERTIFICATE_REVOKED'
  )
    return `${host} refused this machine's client certificate (${code}): check --client-cert and --client-key, or ask for one the server accepts`;
  if (code === 'ERR_SSL_WRONG_VERSION_NUMBER' || code === 'ERR_SSL_PACKET_LENGTH_TOO_LONG')
    return `${host} does not answer https on this port (${code}): is the URL http://?`;
  if (code === 'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE')
    return `${host} ended the TLS handshake (${code}): it may want a client certificate (--client-cert, --client-key) or a TLS version or cipher Node does not offer`;
  // other refusals of a certificate or alerts of the server; a broken record or a handshake
  // timeout is not about certificates and stays a network failure (retried)
  if (/^(CERT_|UNABLE_TO_)|^ERR_(SSL|TLS)_.*(ALERT|CERT)/.test(code))
    return `the TLS connection to ${host} failed (${code})`;
  return null;
}

function hostOnly(host: string): string {
  return host.replace(/:\d+$/, '');
}
