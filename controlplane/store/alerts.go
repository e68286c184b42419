package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sekgate/gateway/shared/money"
)

// Kinds of alert rule (AlertRule.Kind).
const (
	AlertBalanceBelow    = "balance_below"     // an account's balance below Threshold micro-SEK
	AlertBudgetUsedAbove = "budget_used_above" // a budget's spend at or above Threshold percent
	AlertRouteProblem    = "route_problem"     // a node reports a route's breaker open or a health problem
	AlertSpoolAgeAbove   = "spool_age_above"   // a node's oldest unsent usage older than Threshold ms
	AlertNodeSilent      = "node_silent"       // a node not heard from for more than Threshold ms
)

// ValidAlertKind reports whether k names a kind of alert rule.
func ValidAlertKind(k string) bool {
	switch k {
	case AlertBalanceBelow, AlertBudgetUsedAbove, AlertRouteProblem, AlertSpoolAgeAbove, AlertNodeSilent:
		return true
	}
	return false
}

// AlertRule is a condition the control plane checks on an interval and the webhook its
// events go to.
type AlertRule struct {
	ID        string
	Name      string
	Kind      string
	AccountID string // balance and budget rules: one account; empty: every account
	Threshold int64
	// WebhookURL receives the events as JSON, signed with Secret (HMAC-SHA256).
	WebhookURL string
	Secret     string
	Enabled    bool
	CreatedAt  time.Time
	// Firing counts the subjects whose condition holds now.
	Firing int
}

const alertRuleColumns = `r.id, r.name, r.kind, COALESCE(r.account_id, ''), r.threshold, r.webhook_url, r.secret, r.enabled, r.created_at,
	(SELECT count(*) FROM alert_states s WHERE s.rule_id = r.id)::int`

func scanAlertRule(row pgx.Row) (AlertRule, error) {
	var a AlertRule
	err := row.Scan(&a.ID, &a.Name, &a.Kind, &a.AccountID, &a.Threshold, &a.WebhookURL, &a.Secret, &a.Enabled, &a.CreatedAt, &a.Firing)
	a.CreatedAt = a.CreatedAt.UTC()
	return a, err
}

// CreateAlertRule stores a rule with a fresh ID and signing secret and returns it.
func (s *Store) CreateAlertRule(ctx context.Context, r AlertRule) (AlertRule, error) {
	if !ValidAlertKind(r.Kind) {
		return AlertRule{}, fmt.Errorf("%w: alert kind %q", ErrInvalid, r.Kind)
	}
	id, err := randomID("alr_")
	if err != nil {
		return AlertRule{}, err
	}
	var sec [24]byte
	if _, err := rand.Read(sec[:]); err != nil {
		return AlertRule{}, fmt.Errorf("alert secret: %w", err)
	}
	var acct *string
	if r.AccountID != "" {
		acct = &r.AccountID
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO alert_rules (id, name, kind, account_id, threshold, webhook_url, secret, enabled, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, true, $8)`, id, r.Name, r.Kind, acct, r.Threshold, r.WebhookURL, "whsec_"+hex.EncodeToString(sec[:]), s.now())
	if err != nil {
		return AlertRule{}, translate(err, "create alert rule")
	}
	return s.GetAlertRule(ctx, id)
}

// GetAlertRule returns one rule.
func (s *Store) GetAlertRule(ctx context.Context, id string) (AlertRule, error) {
	r, err := scanAlertRule(s.pool.QueryRow(ctx, `SELECT `+alertRuleColumns+` FROM alert_rules r WHERE r.id = $1`, id))
	return r, translate(err, "alert rule "+id)
}

// ListAlertRules returns every rule, oldest first.
func (s *Store) ListAlertRules(ctx context.Context) ([]AlertRule, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+alertRuleColumns+` FROM alert_rules r ORDER BY r.created_at, r.id`)
	if err != nil {
		return nil, translate(err, "list alert rules")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (AlertRule, error) { return scanAlertRule(r) })
	if out == nil {
		out = []AlertRule{}
	}
	return out, translate(err, "list alert rules")
}

// SetAlertRuleEnabled turns a rule on or off. A rule turned off forgets what it found
// standing, so it alerts afresh when turned on.
func (s *Store) SetAlertRuleEnabled(ctx context.Context, id string, enabled bool) (AlertRule, error) {
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE alert_rules SET enabled = $2 WHERE id = $1`, id, enabled)
		if err == nil && tag.RowsAffected() == 0 {
			return fmt.Errorf("alert rule %s: %w", id, ErrNotFound)
		}
		if err == nil && !enabled {
			_, err = tx.Exec(ctx, `DELETE FROM alert_states WHERE rule_id = $1`, id)
		}
		return err
	})
	if err != nil {
		return AlertRule{}, translate(err, "set alert rule "+id)
	}
	return s.GetAlertRule(ctx, id)
}

// DeleteAlertRule removes a rule with its states and deliveries.
func (s *Store) DeleteAlertRule(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM alert_rules WHERE id = $1`, id)
	if err == nil && tag.RowsAffected() == 0 {
		return fmt.Errorf("alert rule %s: %w", id, ErrNotFound)
	}
	return translate(err, "delete alert rule "+id)
}

// AlertFact is one subject whose condition holds: what it is about and the value found.
type AlertFact struct {
	Subject   string // the account, key, route or node the condition holds for
	AccountID string // the account concerned, for balance and budget rules
	Value     int64  // micro-SEK, percent or milliseconds, as the rule's threshold
	Detail    string // a sentence for the operator
}

// LowBalances lists the accounts (one, or every one for accountID empty) whose balance is
// below micro-SEK; suspended accounts are left out.
func (s *Store) LowBalances(ctx context.Context, accountID string, below int64) ([]AlertFact, error) {
	rows, err := s.pool.Query(ctx, `SELECT a.id, a.customer, b.balance_micro_sek FROM accounts a
		JOIN account_balances b ON b.account_id = a.id
		WHERE NOT a.suspended AND b.balance_micro_sek < $2 AND ($1 = '' OR a.id = $1) ORDER BY a.id`, accountID, below)
	if err != nil {
		return nil, translate(err, "low balances")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (AlertFact, error) {
		var f AlertFact
		var customer string
		err := r.Scan(&f.Subject, &customer, &f.Value)
		f.AccountID = f.Subject
		f.Detail = fmt.Sprintf("The balance of %s (%s) is %s SEK.", customer, f.Subject, money.FormatSEK(f.Value))
		return f, err
	})
	return out, translate(err, "low balances")
}

// BudgetsUsedAbove lists the budgets (of one account and its keys, or of every account)
// whose current period's spend is at least percent of their limit.
func (s *Store) BudgetsUsedAbove(ctx context.Context, accountID string, percent int64) ([]AlertFact, error) {
	var accts []string
	if accountID != "" {
		accts = []string{accountID}
	}
	now := s.now()
	spent, err := readSpent(ctx, s.pool, accts, now)
	if err != nil {
		return nil, err
	}
	if len(spent) == 0 {
		return nil, nil
	}
	limits := map[string]int64{}
	periods := map[string]string{}
	rows, err := s.pool.Query(ctx, `SELECT id, budget_period, budget_micro_sek FROM accounts WHERE budget_period IS NOT NULL
		UNION ALL SELECT id, budget_period, budget_micro_sek FROM api_keys WHERE budget_period IS NOT NULL AND revoked_at IS NULL`)
	if err != nil {
		return nil, translate(err, "budgets used")
	}
	var id, period string
	var limit int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &period, &limit}, func() error {
		limits[id], periods[id] = limit, period
		return nil
	}); err != nil {
		return nil, translate(err, "budgets used")
	}
	var out []AlertFact
	for _, x := range spent {
		subj, whose := x.AccountID, "account "+x.AccountID
		if x.KeyID != "" {
			subj, whose = x.KeyID, "key "+x.KeyID+" of account "+x.AccountID
		}
		l := limits[subj]
		if l <= 0 {
			continue
		}
		if pct := x.MicroSEK * 100 / l; pct >= percent {
			out = append(out, AlertFact{Subject: subj, AccountID: x.AccountID, Value: pct,
				Detail: fmt.Sprintf("The budget of %s has %d%% used: %s of %s SEK this %s.", whose, pct, money.FormatSEK(x.MicroSEK), money.FormatSEK(l), periods[subj])})
		}
	}
	return out, nil
}

// SettleAlertRule compares what the rule finds now (firing: subject to the payload of its
// firing event) with what it found standing before, in one transaction that holds the rule's
// row lock (so replicas evaluating at once take turns): a subject that starts to hold is
// stored and gets a firing delivery, one that stopped is removed and gets a resolved
// delivery with resolved(subject, since) as its payload. Subjects that still hold change
// nothing. It returns the number of events queued.
func (s *Store) SettleAlertRule(ctx context.Context, ruleID string, firing map[string]json.RawMessage,
	resolved func(subject string, since time.Time) json.RawMessage) (int, error) {
	now := s.now()
	n := 0
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		var enabled bool
		if err := tx.QueryRow(ctx, `SELECT enabled FROM alert_rules WHERE id = $1 FOR UPDATE`, ruleID).Scan(&enabled); err != nil {
			return err
		}
		if !enabled {
			return nil
		}
		rows, err := tx.Query(ctx, `SELECT subject, since FROM alert_states WHERE rule_id = $1`, ruleID)
		if err != nil {
			return err
		}
		standing := map[string]time.Time{}
		var subj string
		var since time.Time
		if _, err := pgx.ForEachRow(rows, []any{&subj, &since}, func() error { standing[subj] = since; return nil }); err != nil {
			return err
		}
		queue := func(subject, event string, payload json.RawMessage) error {
			n++
			_, err := tx.Exec(ctx, `INSERT INTO alert_deliveries (rule_id, subject, event, payload, created_at, next_attempt_at)
				VALUES ($1, $2, $3, $4, $5, $5)`, ruleID, subject, event, string(payload), now)
			return err
		}
		for subject, payload := range firing {
			if _, ok := standing[subject]; ok {
				continue
			}
			if _, err := tx.Exec(ctx, `INSERT INTO alert_states (rule_id, subject, since) VALUES ($1, $2, $3)`, ruleID, subject, now); err != nil {
				return err
			}
			if err := queue(subject, "firing", payload); err != nil {
				return err
			}
		}
		for subject, since := range standing {
			if _, ok := firing[subject]; ok {
				continue
			}
			if _, err := tx.Exec(ctx, `DELETE FROM alert_states WHERE rule_id = $1 AND subject = $2`, ruleID, subject); err != nil {
				return err
			}
			if err := queue(subject, "resolved", resolved(subject, since.UTC())); err != nil {
				return err
			}
		}
		return nil
	})
	return n, translate(err, "settle alert rule "+ruleID)
}
