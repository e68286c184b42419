package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
)

// States of an alert delivery.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed" // given up after the last attempt
)

// AlertDelivery is one event of a rule on its way to the rule's webhook.
type AlertDelivery struct {
	ID         int64
	RuleID     string
	RuleName   string
	Subject    string
	Event      string // firing or resolved
	Payload    json.RawMessage
	State      string
	Attempts   int
	LastStatus int    // HTTP status of the last attempt (0: none, or no answer)
	LastError  string // why the last attempt failed
	CreatedAt  time.Time
	// NextAttemptAt is when a pending delivery is tried next.
	NextAttemptAt time.Time
	DeliveredAt   *time.Time
	// WebhookURL and Secret are the rule's, for sending (ClaimAlertDeliveries only).
	WebhookURL, Secret string
}

const deliveryColumns = `d.id, d.rule_id, r.name, d.subject, d.event, d.payload, d.state, d.attempts, d.last_status, d.last_error,
	d.created_at, d.next_attempt_at, d.delivered_at, r.webhook_url, r.secret`

func scanDelivery(row pgx.CollectableRow) (AlertDelivery, error) {
	var d AlertDelivery
	var payload []byte
	err := row.Scan(&d.ID, &d.RuleID, &d.RuleName, &d.Subject, &d.Event, &payload, &d.State, &d.Attempts, &d.LastStatus, &d.LastError,
		&d.CreatedAt, &d.NextAttemptAt, &d.DeliveredAt, &d.WebhookURL, &d.Secret)
	d.Payload = payload
	d.CreatedAt, d.NextAttemptAt = d.CreatedAt.UTC(), d.NextAttemptAt.UTC()
	if d.DeliveredAt != nil {
		t := d.DeliveredAt.UTC()
		d.DeliveredAt = &t
	}
	return d, err
}

// ClaimAlertDeliveries takes up to limit pending deliveries that are due and leases them
// for lease (their next attempt moves that far ahead), so another replica does not send
// them meanwhile; the caller reports each attempt with FinishAlertDelivery.
func (s *Store) ClaimAlertDeliveries(ctx context.Context, lease time.Duration, limit int) ([]AlertDelivery, error) {
	now := s.now()
	var out []AlertDelivery
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `WITH due AS (
				SELECT id FROM alert_deliveries WHERE state = 'pending' AND next_attempt_at <= $1
				ORDER BY next_attempt_at, id LIMIT $3 FOR UPDATE SKIP LOCKED)
			UPDATE alert_deliveries d SET next_attempt_at = $2 FROM due WHERE d.id = due.id RETURNING d.id`, now, now.Add(lease), limit)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil || len(ids) == 0 {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT `+deliveryColumns+` FROM alert_deliveries d JOIN alert_rules r ON r.id = d.rule_id
			WHERE d.id = ANY ($1) ORDER BY d.id`, ids)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, scanDelivery)
		return err
	})
	return out, translate(err, "claim alert deliveries")
}

// FinishAlertDelivery records an attempt: delivered, or failed with the answer's status
// (0: none) and the reason, to be tried again at next (nil: given up).
func (s *Store) FinishAlertDelivery(ctx context.Context, id int64, delivered bool, status int, reason string, next *time.Time) error {
	now := s.now()
	state := DeliveryPending
	switch {
	case delivered:
		state = DeliveryDelivered
	case next == nil:
		state = DeliveryFailed
	}
	var deliveredAt *time.Time
	if delivered {
		deliveredAt = &now
	}
	nextAt := now
	if next != nil {
		nextAt = *next
	}
	if len(reason) > 500 {
		reason = reason[:500]
	}
	_, err := s.pool.Exec(ctx, `UPDATE alert_deliveries SET state = $2, attempts = attempts + 1, last_status = $3, last_error = $4,
		next_attempt_at = $5, delivered_at = $6 WHERE id = $1`, id, state, status, cleanText(reason), nextAt, deliveredAt)
	return translate(err, "finish alert delivery")
}

// ListAlertDeliveries returns the most recent deliveries, newest first (ruleID empty: of
// every rule).
func (s *Store) ListAlertDeliveries(ctx context.Context, ruleID string, limit int) ([]AlertDelivery, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+deliveryColumns+` FROM alert_deliveries d JOIN alert_rules r ON r.id = d.rule_id
		WHERE $1 = '' OR d.rule_id = $1 ORDER BY d.created_at DESC, d.id DESC LIMIT $2`, ruleID, limit)
	if err != nil {
		return nil, translate(err, "list alert deliveries")
	}
	out, err := pgx.CollectRows(rows, scanDelivery)
	if out == nil {
		out = []AlertDelivery{}
	}
	return out, translate(err, "list alert deliveries")
}
