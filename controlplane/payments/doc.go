// Package payments implements the customer top-up and the payment-provider webhook of the
// control plane, on Stripe's API (github.com/stripe/stripe-go/v76).
//
// # Top-up
//
// POST /v1/service/topup is forwarded by a data-plane node after it authenticated the API
// key; the node passes the account in X-Gateway-Account-Id and its request ID in
// X-Request-Id. The body is {"amount_sek": <integer 100..50000>}; anything else (a
// fraction, a string, a missing field, malformed JSON) is a 400 invalid_request_error
// naming amount_sek. The handler creates a hosted Checkout Session in payment mode,
// currency SEK, with one line item of amount_sek*100 öre, client_reference_id and
// metadata.account_id set to the account, metadata.amount_sek, and the idempotency key
// "topup-<request id>" so a retried forward cannot create two sessions. It answers
// 200 {"url": "<hosted checkout URL>"}. A failure of the payment provider is a 502
// upstream_error (code payment_provider_error).
//
// # Webhook
//
// POST /v1/stripe/webhook verifies the signature in the Payment-Signature header (the
// provider's "t=<unix>,v1=<hex>" format; the provider's own header name Stripe-Signature is
// accepted when Payment-Signature is absent) against the raw body with a tolerance of
// 300 s. The event's API version is not compared with the library's, so a provider-side
// version change does not reject genuine events. A missing, malformed, wrong or expired
// signature is a 400 and nothing is applied.
//
// Handled event types:
//
//   - checkout.session.completed with payment_status "paid": credits the account.
//   - checkout.session.completed with payment_status "unpaid" (delayed payment methods) or
//     "no_payment_required": recorded, not credited; the credit comes with
//     checkout.session.async_payment_succeeded.
//   - checkout.session.async_payment_succeeded: credits the account.
//   - checkout.session.async_payment_failed: recorded, not credited.
//
// Every other event type is acknowledged with {"received": true} and ignored (not
// recorded).
//
// A credit is the session's amount_total (öre, currency must be SEK) converted to micro-SEK,
// for the account named by client_reference_id (metadata.account_id when the reference is
// absent). It is applied once: in one transaction the event ID is inserted into
// payment_events (unique), the checkout session ID into payment_credits (unique), and a
// ledger entry of kind "topup" whose reference is the session ID. A repeated event, a second
// event for an already credited session, and concurrent deliveries of either therefore credit
// exactly once. The ledger insert fires the store's change notification, so data-plane nodes
// see the new balance within seconds.
//
// A correctly signed event that names no account, an unknown account, or a currency other
// than SEK is recorded in payment_events with that outcome, logged at error level and
// acknowledged (200): the provider retrying it would not change the outcome. The operator
// resolves it by hand (admin credit). Database failures answer 500 so the provider retries.
package payments
