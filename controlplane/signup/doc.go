// Package signup implements the public access-request form (POST /v1/service/signup) and
// the operator's review of the requests (admin API and gatewayctl).
//
// # Form
//
// The body must be application/x-www-form-urlencoded (UTF-8). Fields: name (required, at
// most 200 characters), email (required, a plain address such as a@example.com without a
// display name, at most 254 characters), consent (required, exactly "yes"), and optional
// company, residency, volume (each at most 200 characters) and use_case (at most 4000).
// Surrounding white space is trimmed; for repeated fields the first value counts. website
// is a honeypot that people leave empty.
//
// Submitting creates no account and no key: the request is stored with status pending for
// an operator, who approves or rejects it. Approval creates nothing by itself; with
// create_account it also creates the account (customer = company, or name when company is
// empty) in the same transaction. A second submission for an email that already has a
// pending request is dropped silently.
//
// # Redirects
//
// Every POST is answered 303 See Other with Location:
//
//   - stored, duplicate email, or honeypot filled: the confirmation URL, identical in all
//     three cases, so the redirect never reveals whether an email is known or whether the
//     submission was taken for a bot's;
//   - invalid field: the error URL with ?error=<field> (name, email, consent, company,
//     residency, volume or use_case; the first invalid one in that order);
//   - a body that is not a form (JSON, any other or a missing Content-Type):
//     ?error=unsupported_media_type; an undecodable form: ?error=invalid_form; a body over
//     64 KiB: ?error=too_large;
//   - the database failing: ?error=unavailable.
//
// Exceptions: more than the allowed submissions from one client address (default 5 per
// minute, burst 5) answer 429 rate_limit_error with Retry-After, and methods other than
// POST answer 405 with Allow: POST; both in the JSON error envelope. The client address is
// the last entry of X-Forwarded-For, which the data plane sets, else the connection's.
package signup
