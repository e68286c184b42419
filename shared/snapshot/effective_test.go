package snapshot

import "testing"

func TestEffectiveLimits(t *testing.T) {
	t.Parallel()
	key := &Limits{RequestsPerSecond: 1, Burst: 2}
	acct := &Limits{RequestsPerSecond: 10, MaxConcurrent: 4}
	def := Limits{RequestsPerSecond: 100, Burst: 200, MaxConcurrent: 50}
	for _, tc := range []struct {
		name      string
		key, acct *Limits
		want      Limits
		source    string
	}{
		{"key's own", key, acct, *key, SourceKey},
		{"key's own, account without", key, nil, *key, SourceKey},
		{"through the account", nil, acct, *acct, SourceAccount},
		{"deployment default", nil, nil, def, SourceDefault},
		{"empty own limits still count", &Limits{}, acct, Limits{}, SourceKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, src := EffectiveLimits(tc.key, tc.acct, def)
			if got != tc.want || src != tc.source {
				t.Fatalf("EffectiveLimits = %+v, %q; want %+v, %q", got, src, tc.want, tc.source)
			}
		})
	}
}
