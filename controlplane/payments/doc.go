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
// "topup-<request id>" so a retried forward cannot create two sessions. The session (ID,
// account, amount in öre, currency, livemode, status, creation time, request ID) is
// recorded in checkout_sessions before the URL is handed out; a session whose livemode
// differs from the secret key's mode (sk_live_/sk_test_) or that cannot be recorded is not
// handed out (500), so every session a customer can pay is known. It answers
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
//   - checkout.session.expired: recorded; the recorded session is marked expired.
//   - charge.refunded: debits the refunded amount (ledger kind refund; may take the
//     balance below zero).
//   - charge.dispute.created: recorded; suspends the account.
//
// Every other event type is acknowledged with {"received": true} and ignored (not
// recorded).
//
// A paying event credits only a session in checkout_sessions, and only when the event's
// livemode equals the secret key's mode, client_reference_id (metadata.account_id when the
// reference is absent) names the session's account, and amount_total and currency equal
// the session's. Otherwise the event is recorded with outcome unknown_session, wrong_mode,
// account_mismatch or amount_mismatch, logged at error level, credits nothing, and is
// acknowledged with 200: it is correctly signed, so the provider retrying it would only
// be refused again (and a failing endpoint is eventually disabled by the provider).
//
// A credit is the session's amount (öre) converted to micro-SEK. It is applied once: in one transaction the event ID is inserted into
// payment_events (unique), the checkout session ID into payment_credits (unique), and a
// ledger entry of kind "topup" whose reference is the session ID. A repeated event, a second
// event for an already credited session, and concurrent deliveries of either therefore credit
// exactly once. The ledger insert fires the store's change notification, so data-plane nodes
// see the new balance within seconds.
//
// Refunds and disputes find the session by the payment intent its checkout events carried.
// One that arrives before any checkout event named its payment intent is recorded as
// unknown_session with the intent, charge, amount and dispute, and applied in the
// transaction of the checkout event that names the intent.
// charge.refunded carries the charge's refunded total so far: payment_refunds keeps the
// total already debited per charge, and only the difference is debited (reference
// refund:<charge>:<total>), capped at what the session has left to refund across all of
// its charges (the session's row is locked while a refund applies), so repeated,
// reordered and partial refund events debit exactly what was refunded, and the charges of
// one payment intent together never more than the session credited. charge.dispute.created is
// recorded in payment_disputes (once per dispute) and sets the account's suspended flag:
// nodes refuse its keys (403 account_suspended) until an operator lifts it
// (gatewayctl accounts unsuspend); the disputed amount is not debited (the operator
// decides when the dispute is settled). Refund or dispute events for payments that are not
// the gateway's, or in the other mode, are recorded and change nothing.
//
// A correctly signed event that cannot be applied is recorded in payment_events with its
// outcome, logged at error level and acknowledged (200). The operator resolves genuine
// cases by hand (admin credit). Database failures answer 500 so the provider retries.
package payments
